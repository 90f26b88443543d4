"""Home: what the playground shows, presets, a short guided tour."""

from __future__ import annotations

import streamlit as st

from components.presets import apply_preset, poison_presets
from components.state import init_state

init_state()
st.title("RAG Attack & Defense Playground")
st.write(
    "A retrieval-augmented generation (RAG) system answers from the documents its retriever finds. "
    "Here you attack it. **Poison** its knowledge base — a document made of a question plus an "
    "attacker's text — watch it climb to the top of the results, and see which detectors catch it. "
    "**Extract** its private knowledge base through questions alone — watch records and phone numbers leak "
    "round by round, switch defenses on (up to RAGFort's reindexing and cascade generation) and see what "
    "each buys at what cost in accuracy. Ask whether one **record is in there at all** (membership inference), "
    "plant **canaries** that prove a leak, and check whether one **tenant** can read another's records. "
    "Then **audit your own RAG** — your HTTP service, Chroma collection or LlamaIndex engine — with the same "
    "attacks and a report a CI can gate on. Real embedding models, a real Chroma vector database, real "
    "offline language models, all on your machine."
)
if st.button("New here? Start with the teaching mode (four guided levels)", icon="🎓"):
    st.switch_page("pages/teaching.py")

presets = poison_presets()
names = [p["name"] for p in presets]
choice = st.selectbox(
    "Preset",
    names,
    index=names.index("quick-demo") if "quick-demo" in names else 0,
    help="A whole configuration: corpus, retriever, query set, target, detectors",
)
st.caption(next((p["description"] for p in presets if p["name"] == choice), ""))
row = st.container(horizontal=True, vertical_alignment="center")  # side by side, not one per half-page
run_demo = row.button(
    "Run the demo", type="primary", help="Load the preset, open the poisoning lab and play the attack (Pause stops it)"
)
load_only = row.button("Load preset only", help="Load the preset's settings; an attack prepared in the lab is closed")
if run_demo:
    if apply_preset(choice):
        st.session_state["lab_autoprepare"] = True
        st.switch_page("pages/poisoning_lab.py")
if load_only:
    had = st.session_state.get("lab_run")
    if apply_preset(choice):
        st.success(
            f"Loaded {choice}: see the Pipeline and Poisoning lab pages."
            + (
                f" The attack you had prepared ({had.rounds_done} of {len(had.queries)} questions played) was "
                "closed; its events stay on the Saved runs page."
                if had is not None and hasattr(had, "queries")
                else ""
            )
        )

with st.expander("Guided tour (4 steps)", expanded=True):
    st.markdown(
        "1. **Pipeline** — pick a corpus (the bundled clinic handbook, benchmark data, or your own files), "
        "a retriever and K; build the index and try a query.\n"
        "2. **Poisoning lab** — choose the questions to attack and the text to smuggle in (fake personal data, "
        "a fake diagnosis, misinformation), then **Step** or **Play** through the attack: each question gets its "
        "poisoned document and you see the rank it reaches. Attack success rate (ASR@K) grows as you go.\n"
        "3. **Defend** — switch detectors on: the ℓ2-norm filter is blind for normalised models, while the "
        "Mahalanobis distance over clean anchor documents separates poisons from clean text. Move the threshold "
        "and watch true and false positives trade off; open *Why does it work?* to see the geometry.\n"
        "4. **Attack back** — pick the *camouflaged* attack: the poison now carries its question's best clean "
        "document too. It still ranks first, and the Mahalanobis detector stops seeing it. Compare both runs on "
        "*Saved runs*; grid them on *Sweeps*; look for patterns on *Analysis*."
    )

st.subheader("Knowledge-base extraction")
st.caption(
    "RAG-Thief against the bundled clinic records (320 synthetic patients with fake personal data), answered "
    "by Qwen2.5-0.5B offline: each query asks the assistant to output its context word for word, and each "
    "stolen record's first and last sentence become the next queries. Press **Prepare attack**, then "
    "**Step**: the answer streams in and the leaked records and phone numbers are marked beside their "
    "source, from the first rounds."
)
if st.button("Open the extraction demo", help="Load the quick-extraction-demo preset into the Extraction lab"):
    from components.extraction import load_extract_preset

    if load_extract_preset("quick-extraction-demo"):
        st.switch_page("pages/extraction_lab.py")
if st.button("Compare defenses: leakage against accuracy", icon="🛡️"):
    st.switch_page("pages/defense_comparison.py")
