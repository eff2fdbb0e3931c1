"""Word lists that the offline complexity estimate counts, per language (zh, de, en, fr, it).

Each list holds lowercased words or short phrases as the analysis chain's ``raw_tokens`` produce
them (jieba words for Chinese, ``\\w+`` words elsewhere); a phrase is several words separated by
spaces and matches consecutive tokens. Languages without a list fall back to English.

The lists are deliberately small and high-precision: they feed saturating counts, so a missed
marker costs little, while a frequent false positive (Chinese 若 inside 若干 "several") would
inflate every question. Matching whole jieba words instead of substrings avoids most of those.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class MarkerSet:
    """The marker words of one language, by role.

    Attributes:
        conditional: words that open a condition or exception (if, unless, 如果, sofern).
        connective: words that chain reasoning steps or facts (because, then, but, 但是, danach).
        negation: negations and refusals (not, 没有, kein).
        question: question words; each distinct question is one more issue to resolve.
        party: persons, roles and organisations (landlord, 用人单位, Arbeitgeber).
        relation: words that relate two parties (between, against, 与, gegen).
        quantity: units of time and money that signal a numeric constraint (days, 元, Euro).
        domains: legal domain name -> cue words, for the domain span.
        negation_prefixes: word beginnings that negate the word (Chinese 不签 "not sign", 未通知
            "not notified": jieba keeps them as one word).
        not_negations: words with such a beginning that are legal terms, not negations (不动产).
    """

    conditional: frozenset[str]
    connective: frozenset[str]
    negation: frozenset[str]
    question: frozenset[str]
    party: frozenset[str]
    relation: frozenset[str]
    quantity: frozenset[str]
    domains: dict[str, frozenset[str]]
    negation_prefixes: tuple[str, ...] = ()
    not_negations: frozenset[str] = frozenset()

    def negations(self, tokens: list[str]) -> int:
        """Negation words in ``tokens``: listed ones plus words opening with a negation prefix."""
        count = count_matches(tokens, self.negation)
        if self.negation_prefixes:
            count += sum(1 for t in tokens if len(t) > 1 and t not in self.negation and t not in self.not_negations
                         and t.startswith(self.negation_prefixes))
        return count


def _words(text: str) -> frozenset[str]:
    # Entries are separated by "|" so that phrases may contain spaces.
    return frozenset(w.strip() for w in text.split("|") if w.strip())


_DOMAIN_NAMES = ("labour", "tenancy", "family", "inheritance", "contract", "tort", "criminal", "company",
                 "property", "procedure", "administrative")

_ZH = MarkerSet(
    conditional=_words("如果|若|假如|倘若|要是|如若|万一|只要|只有|除非|一旦|的话|否则|即使|即便|前提|条件|情况下|"
                       "假设|不然|无论|不论"),
    connective=_words("但是|但|可是|然而|而且|并且|因为|由于|所以|因此|于是|然后|之后|后来|结果|导致|同时|另外|"
                      "此外|接着|随后|以后|以前|之前|并|还|又|却"),
    negation=_words("不|没|没有|未|无|非|拒绝|拒不|不能|不得|不予|不让|拖欠"),
    question=_words("吗|么|怎么|怎么办|怎样|如何|是否|能否|可否|什么|哪些|哪个|哪|多少|多久|几|为什么|谁|"
                    "应当|应该|该|有没有|能不能|可不可以|算不算|是不是"),
    party=_words("我|他|她|对方|公司|单位|老板|员工|职工|劳动者|用人单位|雇主|房东|租客|承租人|出租人|丈夫|妻子|"
                 "老公|老婆|配偶|父母|父亲|母亲|子女|儿子|女儿|孩子|朋友|邻居|银行|政府|法院|医院|学校|买方|卖方|"
                 "买家|卖家|债权人|债务人|被告|原告|保险公司|开发商|物业|司机|业主|股东|法人|继承人|被继承人|"
                 "当事人|消费者|经营者|商家|承运人|托运人|委托人|受托人|保证人|担保人|抵押权人|行人|乘客|"
                 "公安机关|检察院|行政机关|村委会|居委会"),
    relation=_words("与|和|跟|同|向|对|给|把|被|之间|由|替|代|帮"),
    quantity=_words("元|万元|万|块|年|月|天|日|小时|岁|周|个月|平方米|公斤|倍|%|百分之"),
    domains={
        "labour": _words("劳动|工资|加班|辞退|解除劳动合同|社保|工伤|劳动合同|用人单位|员工|职工|试用期|"
                         "经济补偿|离职|辞职|劳务"),
        "tenancy": _words("租|租金|房东|租客|承租|出租|租赁|押金|退租"),
        "family": _words("离婚|结婚|婚姻|抚养|抚养费|赡养|子女|夫妻|彩礼|监护|收养|家暴|同居"),
        "inheritance": _words("继承|遗产|遗嘱|遗赠|继承人"),
        "contract": _words("合同|违约|定金|订金|欠款|借款|借钱|还款|债务|债权|担保|保证|买卖|交付|退款|利息"),
        "tort": _words("赔偿|损害|受伤|侵权|交通事故|撞|医疗事故|精神损害|误工费|名誉|隐私"),
        "criminal": _words("犯罪|刑事|判刑|量刑|诈骗|盗窃|故意伤害|拘留|逮捕|坐牢|有期徒刑|罪|自首|取保候审"),
        "company": _words("股东|公司|股权|董事|法人|注册资本|破产|营业执照|分红"),
        "property": _words("房屋|房产|产权|物业|土地|宅基地|抵押|不动产|拆迁|征收|业主"),
        "procedure": _words("起诉|诉讼|上诉|仲裁|证据|管辖|执行|判决|时效|立案|律师|申诉|再审"),
        "administrative": _words("行政|处罚|罚款|许可|审批|复议|税|环保|公安|工商|市场监督"),
    },
    negation_prefixes=("不", "没", "未"),
    not_negations=_words("不动产|不当得利|不可抗力|未成年|未成年人|不正当竞争|不在|不少|不同|不久|未来|没收"),
)

_DE = MarkerSet(
    conditional=_words("wenn|falls|sofern|soweit|außer|ausser|obwohl|obgleich|es sei denn|vorausgesetzt|"
                       "unter der voraussetzung|voraussetzung|bedingung|ansonsten|sonst|im fall|im falle|"
                       "ob|solange|auch wenn|selbst wenn"),
    connective=_words("aber|jedoch|dann|danach|anschließend|weil|da|deshalb|daher|trotzdem|sodass|nachdem|"
                      "bevor|außerdem|zudem|inzwischen|mittlerweile|nun|jetzt|seitdem|später|allerdings|"
                      "dennoch|darauf"),
    negation=_words("nicht|kein|keine|keinen|keiner|keinem|nie|niemals|ohne|weder|verweigert|verweigern|"
                    "abgelehnt|ablehnen"),
    question=_words("was|wie|wann|wo|warum|wieso|weshalb|welche|welcher|welches|welchen|wer|wem|wen|"
                    "kann|darf|muss|müssen|dürfen|können|steht|habe ich"),
    party=_words("ich|er|sie|vermieter|vermieterin|mieter|mieterin|arbeitgeber|arbeitnehmer|chef|käufer|"
                 "verkäufer|mann|frau|ehemann|ehefrau|ehepartner|lebenspartner|partner|partnerin|vater|mutter|"
                 "eltern|kind|kinder|sohn|tochter|bruder|schwester|nachbar|nachbarin|nachbarn|bank|versicherung|"
                 "erbe|erben|erblasser|gläubiger|schuldner|firma|händler|verkäuferin|hausverwaltung|verwalter|"
                 "eigentümer|vermieterseite|handwerker|unternehmer|makler|anwalt|notar|gericht|behörde|amt|"
                 "bürge|schenker|beschenkte|großeltern|oma|opa|exfrau|exmann|freund|freundin"),
    relation=_words("zwischen|gegen|gegenüber|mit|an|von|für|bei"),
    quantity=_words("euro|eur|€|jahre|jahren|jahr|monate|monaten|monat|wochen|woche|tage|tagen|tag|prozent|"
                    "%|stunden|qm|m2"),
    domains={
        "labour": _words("arbeit|arbeitgeber|arbeitnehmer|kündigung|gehalt|lohn|urlaub|arbeitsvertrag|"
                         "überstunden|abfindung"),
        "tenancy": _words("miete|mieter|vermieter|mietvertrag|kaution|nebenkosten|wohnung|mieterhöhung|"
                          "eigenbedarf|untermiete"),
        "family": _words("scheidung|ehe|unterhalt|sorgerecht|umgang|ehevertrag|trennung|kindesunterhalt|"
                         "zugewinn|adoption|vaterschaft"),
        "inheritance": _words("erbe|erben|erbschaft|testament|pflichtteil|nachlass|erbschein|erblasser|"
                              "vermächtnis|ausschlagung"),
        "contract": _words("vertrag|kaufvertrag|kauf|gewährleistung|rücktritt|widerruf|mangel|mängel|"
                           "zahlung|rechnung|darlehen|schulden|bürgschaft|garantie|lieferung"),
        "tort": _words("schaden|schadensersatz|schmerzensgeld|unfall|haftung|verletzt|verletzung|"
                       "beschädigt"),
        "criminal": _words("straftat|strafe|anzeige|betrug|diebstahl|polizei|staatsanwaltschaft"),
        "company": _words("gesellschaft|gmbh|gesellschafter|verein|geschäftsführer|firma"),
        "property": _words("grundstück|grundbuch|eigentum|eigentümer|haus|immobilie|nießbrauch|"
                           "wohnrecht|hypothek|grundschuld|wohnungseigentum|nachbar"),
        "procedure": _words("klage|gericht|anwalt|frist|verjährung|mahnbescheid|prozess|beweis|klagen"),
        "administrative": _words("behörde|amt|steuer|finanzamt|jobcenter|bescheid|genehmigung"),
    },
)

_EN = MarkerSet(
    conditional=_words("if|unless|provided|provided that|whether|although|though|except|in case|"
                       "condition|otherwise|even if|as long as|only if|where"),
    connective=_words("but|however|then|after|afterwards|before|because|since|therefore|so|thus|also|moreover|"
                      "furthermore|meanwhile|later|subsequently|nevertheless|yet|while"),
    negation=_words("not|no|never|without|neither|nor|refuse|refused|refuses|fail|failed|fails"),
    question=_words("what|how|when|who|whom|why|which|can|may|must|should|does|is it|am i"),
    party=_words("i|he|she|they|landlord|tenant|employer|employee|buyer|seller|purchaser|vendor|husband|wife|"
                 "spouse|father|mother|parent|parents|child|children|son|daughter|neighbor|neighbour|bank|"
                 "insurer|company|debtor|creditor|obligor|obligee|plaintiff|defendant|owner|agent|principal|"
                 "guarantor|surety|mortgagee|mortgagor|lessor|lessee|heir|heirs|decedent|minor|guardian|"
                 "third party|person|b|c|d"),
    relation=_words("between|against|with|to|from|toward|towards|by|on behalf of"),
    quantity=_words("yen|dollars|euro|euros|usd|$|€|years|year|months|month|weeks|week|days|day|percent|%|hours"),
    domains={
        "labour": _words("employment|employer|employee|wage|wages|salary|dismissal|overtime|labor|labour"),
        "tenancy": _words("lease|rent|landlord|tenant|lessor|lessee|deposit|tenancy"),
        "family": _words("divorce|marriage|married|custody|support|spouse|adoption|parental|child"),
        "inheritance": _words("inheritance|inherit|will|estate|heir|heirs|succession|bequest|legacy"),
        "contract": _words("contract|sale|breach|warranty|rescission|rescind|payment|loan|debt|guarantee|"
                           "surety|obligation|performance|claim|claims|assignment|set-off"),
        "tort": _words("damages|damage|tort|injury|injured|accident|liability|negligence|compensation"),
        "criminal": _words("crime|criminal|police|theft|fraud|prosecution|offence|offense"),
        "company": _words("company|corporation|shareholder|director|partnership|juridical"),
        "property": _words("ownership|property|possession|easement|mortgage|land|building|servitude|"
                           "co-ownership|lien|pledge|real"),
        "procedure": _words("court|lawsuit|sue|action|prescription|limitation|appeal|evidence|procedure"),
        "administrative": _words("authority|permit|license|licence|tax|registration|government"),
    },
)

_FR = MarkerSet(
    conditional=_words("si|sauf|lorsque|à condition que|pourvu que|bien que|même si|à moins que|sinon|"
                       "au cas où|condition|quoique"),
    connective=_words("mais|cependant|puis|ensuite|après|avant|parce que|car|donc|ainsi|aussi|toutefois|"
                      "pourtant|alors|depuis"),
    negation=_words("ne|pas|non|sans|jamais|aucun|aucune|refuse|refusé"),
    question=_words("que|quoi|comment|quand|où|pourquoi|quel|quelle|quels|quelles|qui|puis-je|peut|dois"),
    party=_words("je|il|elle|bailleur|locataire|employeur|employé|salarié|acheteur|vendeur|mari|épouse|"
                 "conjoint|père|mère|parents|enfant|enfants|fils|fille|voisin|banque|assurance|société|"
                 "débiteur|créancier|propriétaire|héritier|héritiers"),
    relation=_words("entre|contre|avec|envers|auprès de"),
    quantity=_words("francs|chf|euros|€|ans|an|mois|semaines|jours|jour|pour cent|%|heures"),
    domains={
        "labour": _words("travail|employeur|salaire|licenciement|congé|contrat de travail"),
        "tenancy": _words("bail|loyer|locataire|bailleur|caution|logement"),
        "family": _words("divorce|mariage|pension|garde|entretien|conjoint"),
        "inheritance": _words("succession|héritage|testament|héritier|réserve"),
        "contract": _words("contrat|vente|achat|garantie|défaut|paiement|prêt|dette"),
        "tort": _words("dommage|dommages|accident|responsabilité|blessé|indemnité"),
        "criminal": _words("infraction|plainte|vol|escroquerie|police|pénal"),
        "company": _words("société|associé|actionnaire|administrateur"),
        "property": _words("propriété|immeuble|terrain|servitude|hypothèque"),
        "procedure": _words("tribunal|procès|délai|prescription|avocat|recours"),
        "administrative": _words("autorité|impôt|permis|administration"),
    },
)

_IT = MarkerSet(
    conditional=_words("se|qualora|purché|salvo|a meno che|sebbene|benché|anche se|altrimenti|condizione|"
                       "nel caso|a condizione che"),
    connective=_words("ma|però|poi|dopo|prima|perché|quindi|dunque|inoltre|tuttavia|allora|infine|anche"),
    negation=_words("non|senza|mai|nessun|nessuno|nessuna|rifiuta|rifiutato"),
    question=_words("che|cosa|come|quando|dove|perché|quale|quali|chi|posso|può|devo"),
    party=_words("io|lui|lei|locatore|inquilino|conduttore|datore di lavoro|lavoratore|dipendente|"
                 "acquirente|venditore|marito|moglie|coniuge|padre|madre|genitori|figlio|figlia|figli|vicino|"
                 "banca|assicurazione|società|debitore|creditore|proprietario|erede|eredi"),
    relation=_words("tra|fra|contro|con|verso|nei confronti di"),
    quantity=_words("franchi|chf|euro|€|anni|anno|mesi|mese|settimane|giorni|giorno|per cento|%|ore"),
    domains={
        "labour": _words("lavoro|datore|salario|stipendio|licenziamento|ferie"),
        "tenancy": _words("affitto|locazione|inquilino|locatore|cauzione|pigione"),
        "family": _words("divorzio|matrimonio|alimenti|custodia|mantenimento|coniuge"),
        "inheritance": _words("successione|eredità|testamento|erede|legittima"),
        "contract": _words("contratto|vendita|acquisto|garanzia|difetto|pagamento|prestito|debito"),
        "tort": _words("danno|danni|incidente|responsabilità|ferito|risarcimento"),
        "criminal": _words("reato|denuncia|furto|truffa|polizia|penale"),
        "company": _words("società|socio|azionista|amministratore"),
        "property": _words("proprietà|immobile|terreno|servitù|ipoteca"),
        "procedure": _words("tribunale|causa|termine|prescrizione|avvocato|ricorso"),
        "administrative": _words("autorità|imposta|permesso|amministrazione"),
    },
)

_BY_LANGUAGE = {"zh": _ZH, "de": _DE, "en": _EN, "fr": _FR, "it": _IT}
assert all(set(m.domains) == set(_DOMAIN_NAMES) for m in _BY_LANGUAGE.values())


@cache
def markers_for(lang: str) -> MarkerSet:
    """The marker set of ``lang`` (an ISO 639-1 code); English for languages without one.

    Example::

        "如果" in markers_for("zh").conditional   # True
    """
    base = (lang or "en").split("-")[0].lower()
    return _BY_LANGUAGE.get(base, _EN)


def count_matches(tokens: list[str], words: frozenset[str]) -> int:
    """How many times any entry of ``words`` occurs in ``tokens`` (phrases match consecutive tokens).

    Example::

        count_matches(["es", "sei", "denn", "wenn"], frozenset({"wenn", "es sei denn"}))   # 2
    """
    if not tokens or not words:
        return 0
    phrases = [tuple(w.split()) for w in words if " " in w]
    count = sum(1 for t in tokens if t in words)
    for phrase in phrases:
        n = len(phrase)
        count += sum(1 for i in range(len(tokens) - n + 1) if tuple(tokens[i:i + n]) == phrase)
    return count


def distinct_matches(tokens: list[str], words: frozenset[str]) -> set[str]:
    """The distinct single-word entries of ``words`` found in ``tokens``."""
    return {t for t in tokens if t in words}
