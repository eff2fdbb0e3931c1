"""The LLM plumbing: prompts, output schemas, the per-query budget and the one client.

* :mod:`service.llm.prompt`: the versioned prompt files (``prompts/<role>.txt``), rendering, and
  quoting untrusted data (documents reach the model only as quoted JSON);
* :mod:`service.llm.schemas`: each role's output contract (``OUTPUT_SCHEMAS``);
* :mod:`service.llm.budget`: :class:`~service.llm.budget.CallBudget`, calls and tokens per query;
* :mod:`service.llm.client`: :class:`~service.llm.client.LlmClient`, strict JSON answers checked
  against their schema (:mod:`service.json_strict`), retries with backoff, a bound on requests in
  flight, and an :class:`~service.llm.client.LlmOutcome` that never raises for model or endpoint
  failures.

Only :class:`~service.pipelines.build.Runtime` builds a client; the agents, the LLM reranker and
the complexity rater receive it.
"""
