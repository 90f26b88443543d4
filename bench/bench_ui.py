"""UI benchmarks (not tests): the app's own cost per step, cold start to the first page, and the extraction
demo's round in a real browser against the engine's own time for the same round.

    .venv/bin/python bench/bench_ui.py [--steps 20]
    .venv/bin/python bench/bench_ui.py --case extraction-browser [--rounds 3] [--busy]

* per step: AppTest clicks Step N times on the poisoning lab; the engine's own time inside each
  click (PoisoningRun.step + finish, i.e. model and search time) is measured and subtracted,
  leaving the UI's cost (script rerun, rendering, figure building). Target ≤ 150 ms.
* cold start: a fresh Python process imports the app and renders the home page (AppTest).
* extraction-browser: ``streamlit run app.py`` driven by headless Debian chromium (Playwright), as a new user:
  Home -> Open the extraction demo -> Prepare attack -> Step x ``--rounds``. For each round: click -> the
  answer starts streaming -> the finished panel ("N/10 rounds", the app idle again), beside the engine's own
  seconds for that round and its first answer token (the run's ``round_ended`` / ``generated`` events, written
  by the same server process). ``--busy`` runs one CPU-bound process beside it (the contention case).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


BUSY_JS = "() => !!document.querySelector('[data-testid=\"stStatusWidget\"]')"


def _idle(pg, quiet: float = 1.0, timeout: float = 600) -> None:
    """Wait until the app has not been running for ``quiet`` seconds."""
    end, calm = time.monotonic() + timeout, None
    while time.monotonic() < end:
        if pg.evaluate(BUSY_JS):
            calm = None
            pg.wait_for_function(f"() => !({BUSY_JS})()", timeout=int(timeout * 1000))
        calm = calm or time.monotonic()
        if time.monotonic() - calm >= quiet:
            return
        pg.wait_for_timeout(50)
    raise RuntimeError("the app kept running")


def extraction_browser(rounds: int, busy: bool) -> dict:
    """The extraction demo's rounds in headless chromium, each beside the engine's own time for it."""
    import tempfile

    from playwright.sync_api import expect, sync_playwright

    sys.path.insert(0, str(REPO / "tests"))
    from helpers import streamlit_server

    from engine.events import Generated, RoundEnded, read_jsonl

    cache = Path(tempfile.mkdtemp(prefix="bench-ui-x-"))
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    rows = []
    try:
        with (
            streamlit_server(REPO, cache / "streamlit.log", {"RAG_PLAYGROUND_CACHE": str(cache)}) as url,
            sync_playwright() as p,
        ):
            b = p.chromium.launch(
                executable_path="/usr/bin/chromium",
                headless=True,
                args=["--no-sandbox", "--disable-gpu", "--no-first-run"],
            )
            pg = b.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            pg.set_default_timeout(600_000)
            pg.goto(url, wait_until="domcontentloaded")
            main_ = pg.locator('[data-testid="stMain"]')
            pg.get_by_role("button", name="Open the extraction demo").click()
            expect(main_.get_by_role("heading", name="Extraction lab")).to_be_visible()
            _idle(pg)
            pg.get_by_role("button", name="Prepare attack").click()
            step = pg.get_by_role("button", name="Step", exact=True)
            main_.get_by_text("0/10 rounds").first.wait_for()
            _idle(pg)
            for n in range(1, rounds + 1):
                expect(step).to_be_enabled()
                t0 = time.monotonic()
                step.click()
                live = pg.get_by_text("Answer (streaming):", exact=False)
                done = pg.get_by_text(f"{n}/10 rounds")
                live.first.or_(done.first).wait_for()
                t_first = time.monotonic() - t0
                done.first.wait_for()
                t_done = time.monotonic() - t0
                _idle(pg, quiet=0.3)
                rows.append(
                    {
                        "round": n,
                        "first_words_s": round(t_first, 2),
                        "finished_s": round(t_done, 2),
                        "idle_s": round(time.monotonic() - t0 - 0.3, 2),
                    }
                )
            b.close()
    finally:
        if hog:
            hog.kill()
            hog.wait()
    events = sorted(cache.rglob("events.jsonl"), key=lambda f: f.stat().st_mtime)[-1]
    evs = read_jsonl(events)
    ends = {e.round: e for e in evs if isinstance(e, RoundEnded)}
    gens = {e.round: e for e in evs if isinstance(e, Generated)}
    for row in rows:
        eng = sum(ends[row["round"]].timings.values())
        row["engine_round_s"] = round(eng, 2)
        row["engine_first_token_s"] = gens[row["round"]].info.get("first_token_seconds")
        row["ui_overhead_s"] = round(row["finished_s"] - eng, 2)
        row["browser_over_engine"] = round(row["finished_s"] / eng, 2)
    fin = [r["finished_s"] for r in rows]
    eng = [r["engine_round_s"] for r in rows]
    return {
        "case": "extraction-browser",
        "busy": busy,
        "rounds": rows,
        "browser_round_median_s": round(statistics.median(fin), 2),
        "engine_round_median_s": round(statistics.median(eng), 2),
        "browser_over_engine": round(sum(fin) / sum(eng), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--case", choices=("poisoning", "extraction-browser"), default="poisoning")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--busy", action="store_true", help="extraction-browser: one CPU-bound process beside it")
    args = ap.parse_args()
    if args.case == "extraction-browser":
        res = extraction_browser(args.rounds, args.busy)
        for r in res["rounds"]:
            print(
                f"round {r['round']}: first words {r['first_words_s']} s, finished {r['finished_s']} s "
                f"(engine {r['engine_round_s']} s, first token {r['engine_first_token_s']} s) -> "
                f"{r['browser_over_engine']}x"
            )
        print(json.dumps(res))
        return
    from streamlit.testing.v1 import AppTest

    from engine.runs.poisoning import PoisoningRun

    engine_time = {"t": 0.0}
    orig_step, orig_finish = PoisoningRun.step, PoisoningRun.finish

    def timed_step(self, count=1):
        t = time.perf_counter()
        try:
            return orig_step(self, count)
        finally:
            engine_time["t"] += time.perf_counter() - t

    def timed_finish(self):
        t = time.perf_counter()
        try:
            return orig_finish(self)
        finally:
            engine_time["t"] += time.perf_counter() - t

    PoisoningRun.step, PoisoningRun.finish = timed_step, timed_finish
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600)
    at.run()
    at.switch_page("pages/poisoning_lab.py").run()
    next(n for n in at.number_input if n.label.startswith("How many")).set_value(args.steps + 1)
    next(b for b in at.button if b.label == "Prepare attack").click().run()
    at.button(key="btn_step").click().run()  # warm-up (first figures, first detector report)
    totals, ui = [], []
    for _ in range(args.steps):
        engine_time["t"] = 0.0
        t = time.perf_counter()
        at.button(key="btn_step").click().run()
        dt = time.perf_counter() - t
        totals.append(dt)
        ui.append(dt - engine_time["t"])
    assert not at.exception

    code = (
        "import time; t=time.perf_counter(); from streamlit.testing.v1 import AppTest; "
        "at=AppTest.from_file('app.py', default_timeout=300); at.run(); assert not at.exception; "
        "print(time.perf_counter()-t)"
    )
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=600)
    cold_process = time.perf_counter() - t
    res = {
        "steps": args.steps,
        "ui_ms_per_step_median": 1000 * statistics.median(ui),
        "ui_ms_per_step_p90": 1000 * sorted(ui)[int(0.9 * (len(ui) - 1))],
        "total_ms_per_step_median": 1000 * statistics.median(totals),
        "cold_start_first_page_s": cold_process,
        "cold_start_script_s": float(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else None,
    }
    for k, v in res.items():
        print(f"{k}: {v:.1f}" if isinstance(v, float) else f"{k}: {v}")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
