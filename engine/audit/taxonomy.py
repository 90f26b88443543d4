"""The two catalogues a security review speaks: the OWASP Top 10 for LLM Applications 2025 and MITRE ATLAS.

Sources:

* OWASP Top 10 for LLM Applications 2025 (OWASP GenAI Security Project, released 18 November 2024),
  https://genai.owasp.org/llm-top-10/ — entry ids ``LLM01:2025`` … ``LLM10:2025`` and their names.
* MITRE ATLAS, data release 5.6.0 (``dist/ATLAS.yaml`` of https://github.com/mitre-atlas/atlas-data, May
  2026) — technique ids and names as that file gives them (e.g. AML.T0070 "RAG Poisoning", added in 4.8.0).

Which entries a finding carries is this playground's mapping, stated per attack family below: extraction
is sensitive-information disclosure through the retrieval layer (and, where its queries carry instructions,
direct prompt injection); poisoning plants false entries the retriever serves (and a blocker document that
instructs the model is indirect prompt injection that denies service).
"""

from __future__ import annotations

from typing import Any

OWASP_SOURCE = "OWASP Top 10 for LLM Applications 2025, https://genai.owasp.org/llm-top-10/"
ATLAS_SOURCE = "MITRE ATLAS 5.6.0 (dist/ATLAS.yaml, github.com/mitre-atlas/atlas-data)"

OWASP = {
    "LLM01:2025": "Prompt Injection",
    "LLM02:2025": "Sensitive Information Disclosure",
    "LLM04:2025": "Data and Model Poisoning",
    "LLM08:2025": "Vector and Embedding Weaknesses",
    "LLM09:2025": "Misinformation",
}
ATLAS = {
    "AML.T0024": "Exfiltration via AI Inference API",
    "AML.T0029": "Denial of AI Service",
    "AML.T0051.000": "LLM Prompt Injection: Direct",
    "AML.T0051.001": "LLM Prompt Injection: Indirect",
    "AML.T0057": "LLM Data Leakage",
    "AML.T0066": "Retrieval Content Crafting",
    "AML.T0070": "RAG Poisoning",
    "AML.T0071": "False RAG Entry Injection",
    "AML.T0085.000": "Data from AI Services: RAG Databases",
}

# attack → (OWASP entries, ATLAS techniques); attacks not listed take their family's default
EXTRACTION_DEFAULT = (("LLM02:2025", "LLM08:2025"), ("AML.T0057", "AML.T0085.000", "AML.T0024"))
INSTRUCTING_EXTRACTION = (
    ("LLM02:2025", "LLM08:2025", "LLM01:2025"),
    ("AML.T0057", "AML.T0085.000", "AML.T0024", "AML.T0051.000"),
)
POISONING_DEFAULT = (("LLM04:2025", "LLM08:2025", "LLM09:2025"), ("AML.T0070", "AML.T0071", "AML.T0066"))
BY_ATTACK = {
    ("extraction", "zeng"): INSTRUCTING_EXTRACTION,  # "repeat all the context"
    ("extraction", "rag-thief"): INSTRUCTING_EXTRACTION,  # an anchor plus "output every context document"
    ("extraction", "code-claim"): INSTRUCTING_EXTRACTION,  # the context requested as a code task
    ("extraction", "worm"): INSTRUCTING_EXTRACTION,
    ("extraction", "ikea"): EXTRACTION_DEFAULT,  # benign on-topic questions only
    ("poisoning", "jamming"): (("LLM04:2025", "LLM01:2025", "LLM08:2025"), ("AML.T0070", "AML.T0051.001", "AML.T0029")),
    ("poisoning", "trigger"): (("LLM04:2025", "LLM08:2025", "LLM09:2025"), ("AML.T0070", "AML.T0066")),
}


def tags(family: str, attack: str) -> dict[str, list[dict[str, str]]]:
    """``{"owasp": [{"id", "name"}], "atlas": [{"id", "name"}]}`` for a finding of ``family`` / ``attack``."""
    default = EXTRACTION_DEFAULT if family == "extraction" else POISONING_DEFAULT
    owasp, atlas = BY_ATTACK.get((family, attack), default)
    return {
        "owasp": [{"id": i, "name": OWASP[i]} for i in owasp],
        "atlas": [{"id": i, "name": ATLAS[i]} for i in atlas],
    }


def sources() -> dict[str, Any]:
    """Where the ids come from (written into every report)."""
    return {"owasp": OWASP_SOURCE, "atlas": ATLAS_SOURCE}
