"""Load benchmark: a class on one server. One ``streamlit run app.py`` on 127.0.0.1, many browser sessions at once.

    .venv/bin/python bench/bench_classroom.py [--poisoning 10] [--extraction 3] [--steps 3] [--limit-s 1500]
                                              [--servers 1]

Each session is its own browser context (its own Streamlit session) in one headless Debian chromium, driven
concurrently through Playwright's async API, as students would: poisoning sessions press *Run the demo* on Home
(the quick-demo preset) and then *Step* ``--steps`` times; extraction sessions press *Open the extraction demo*,
*Prepare attack*, then *Step* ``--steps`` times. Every session starts together. Measured: each click's latency
(click -> the caption that says the step is done), p50/p95 per kind, beside a lone session of each kind measured
first on the same server; the server's resident memory before and after (per session); any exception box. The
results are checked from the run folders the server wrote: every poisoning session's events (poisons, retrieval,
detector scores, round ends) and every extraction session's queries and answers must equal the lone session's
(same preset, same seed; ids and times left out). A session that fails leaves a screenshot and its page's text in
``$TMPDIR/bench-classroom-shots``. Bounded: loopback only, 420 s per wait, ``--limit-s`` for the load phase.
``--servers N`` starts N app processes on one cache folder (as N processes behind a proxy would be) and spreads
the sessions over them in turn; the lone sessions use the first; memory is the sum over the processes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
BUSY_JS = "() => !!document.querySelector('[data-testid=\"stStatusWidget\"]')"
ERRORS = '[data-testid="stException"]'
TIMEOUT_MS = 420_000
SHOTS = Path(tempfile.gettempdir()) / "bench-classroom-shots"


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children (MB)."""
    import psutil

    p = psutil.Process(pid)
    return sum(q.memory_info().rss for q in [p, *p.children(recursive=True)]) / 2**20


async def idle(pg, quiet: float = 0.5) -> None:
    calm = None
    while True:
        if await pg.evaluate(BUSY_JS):
            calm = None
            await pg.wait_for_function(f"() => !({BUSY_JS})()", timeout=TIMEOUT_MS)
        calm = calm or time.monotonic()
        if time.monotonic() - calm >= quiet:
            return
        await asyncio.sleep(0.1)


async def open_home(browser, url: str, start: asyncio.Event, box: dict):
    """A new browser context (its own Streamlit session) on Home, settled; returns once ``start`` is set."""
    ctx = await browser.new_context(viewport={"width": 1300, "height": 900})
    pg = await ctx.new_page()
    box["page"] = pg
    pg.set_default_timeout(TIMEOUT_MS)
    await pg.goto(url, wait_until="domcontentloaded")
    await pg.get_by_role("heading", name="RAG Attack & Defense Playground").wait_for()
    await idle(pg)
    await start.wait()
    return ctx, pg


async def poisoning_session(browser, url: str, steps: int, start: asyncio.Event, box: dict) -> dict:
    ctx, pg = await open_home(browser, url, start, box)
    lat, t0 = [], time.monotonic()
    await pg.get_by_role("button", name="Run the demo").click()
    step = pg.get_by_role("button", name="Step", exact=True)
    await step.wait_for()
    await pg.get_by_text("questions attacked", exact=False).first.wait_for()
    await idle(pg)
    prepare_s = time.monotonic() - t0
    for n in range(1, steps + 1):
        t = time.monotonic()
        await step.click()
        await pg.get_by_text(re.compile(rf"\b{n}/\d+ questions attacked")).first.wait_for()
        lat.append(time.monotonic() - t)
        await idle(pg, quiet=0.2)
    cap = await pg.get_by_text("questions attacked", exact=False).first.inner_text()
    errors = await pg.locator(ERRORS).count()
    await ctx.close()
    return {"kind": "poisoning", "prepare_s": prepare_s, "latencies": lat, "caption": cap, "errors": errors}


async def extraction_session(browser, url: str, steps: int, start: asyncio.Event, box: dict) -> dict:
    ctx, pg = await open_home(browser, url, start, box)
    t0 = time.monotonic()
    await pg.get_by_role("button", name="Open the extraction demo").click()
    await pg.get_by_role("button", name="Prepare attack").wait_for()
    await idle(pg)
    await pg.get_by_role("button", name="Prepare attack").click()
    step = pg.get_by_role("button", name="Step", exact=True)
    await pg.get_by_text("0/10 rounds").first.wait_for()
    await idle(pg)
    prepare_s = time.monotonic() - t0
    lat = []
    for n in range(1, steps + 1):
        t = time.monotonic()
        await step.click()
        await pg.get_by_text(f"{n}/10 rounds").first.wait_for()
        lat.append(time.monotonic() - t)
        await idle(pg, quiet=0.2)
    errors = await pg.locator(ERRORS).count()
    await ctx.close()
    return {"kind": "extraction", "prepare_s": prepare_s, "latencies": lat, "errors": errors}


async def guarded(name: str, session, browser, url: str, steps: int, start: asyncio.Event) -> dict:
    """Run one session; on failure keep a screenshot and the page's text under SHOTS, then re-raise."""
    box: dict = {}
    try:
        return await session(browser, url, steps, start, box)
    except BaseException:
        pg = box.get("page")
        if pg is not None:
            SHOTS.mkdir(parents=True, exist_ok=True)
            try:
                await pg.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
                (SHOTS / f"{name}.txt").write_text(await pg.inner_text("body"))
            except Exception:  # noqa: BLE001 - best effort: the failure itself is what is reported
                pass
        raise


def run_signatures(cache: Path, kind: str) -> list[list[str]]:
    """Every run's events of one kind (poisoning: retrieval, poisons, detector scores, round ends; extraction:
    queries and answers), without ids and times, oldest run first: equal lists mean equal results."""
    import dataclasses

    from engine.events import read_jsonl

    keep = {
        "poisoning": ("poison_injected", "retrieved", "detector_scored", "round_ended"),
        "extraction": ("query_issued", "generated"),
    }[kind]
    drop = {"seq", "run_id", "t", "ts", "time", "timings", "seconds", "elapsed_s", "info"}
    out = []
    for f in sorted(cache.rglob("events.jsonl"), key=lambda p: p.stat().st_mtime):
        evs = read_jsonl(f)
        kinds = {e.kind for e in evs}
        if ("poison_injected" in kinds) != (kind == "poisoning"):
            continue
        sig = [
            json.dumps({k: v for k, v in dataclasses.asdict(e).items() if k not in drop}, sort_keys=True, default=str)
            for e in evs
            if e.kind in keep
        ]
        if sig:
            out.append(sig)
    return out


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))], 2) if xs else float("nan")


async def load(urls: list[str], n_poison: int, n_extract: int, steps: int, limit_s: float) -> tuple[dict, dict]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox", "--disable-gpu", "--no-first-run"]
        )
        go = asyncio.Event()
        go.set()
        lone_p = await guarded("lone-poisoning", poisoning_session, browser, urls[0], steps, go)
        lone_x = await guarded("lone-extraction", extraction_session, browser, urls[0], steps, go)
        start = asyncio.Event()
        kinds = [("poisoning", poisoning_session)] * n_poison + [("extraction", extraction_session)] * n_extract
        tasks = [
            asyncio.create_task(guarded(f"{kind}-{i}", session, browser, urls[i % len(urls)], steps, start))
            for i, (kind, session) in enumerate(kinds)
        ]
        await asyncio.sleep(20)  # every session has its page open
        t0 = time.monotonic()
        start.set()
        done = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout=limit_s)
        wall = time.monotonic() - t0
        await browser.close()
    return {"poisoning": lone_p, "extraction": lone_x}, {"sessions": done, "wall_s": wall}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--poisoning", type=int, default=10)
    ap.add_argument("--extraction", type=int, default=3)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--limit-s", type=float, default=1500)
    ap.add_argument("--servers", type=int, default=1, help="app processes sharing the sessions")
    args = ap.parse_args()
    import contextlib

    import psutil
    from helpers import streamlit_server

    cache = Path(tempfile.mkdtemp(prefix="bench-class-"))
    with contextlib.ExitStack() as stack:
        urls = [
            stack.enter_context(
                streamlit_server(
                    REPO, cache / f"streamlit-{i}.log", {"RAG_PLAYGROUND_CACHE": str(cache / "cache")}, timeout=180
                )
            )
            for i in range(args.servers)
        ]
        ports = {int(u.rsplit(":", 1)[1]) for u in urls}
        servers = [
            c.pid
            for c in psutil.net_connections("tcp")
            if c.laddr and c.laddr.port in ports and c.status == psutil.CONN_LISTEN
        ]
        mem0 = sum(rss_mb(s) for s in servers)
        lone, crowd = asyncio.run(load(urls, args.poisoning, args.extraction, args.steps, args.limit_s))
        mem1 = sum(rss_mb(s) for s in servers)
    sessions = crowd["sessions"]
    failed = [repr(s) for s in sessions if isinstance(s, BaseException)]
    ok = [s for s in sessions if isinstance(s, dict)]
    res = {
        "servers": args.servers,
        "sessions": {"poisoning": args.poisoning, "extraction": args.extraction},
        "steps": args.steps,
        "failed_sessions": failed,
        "exception_boxes": sum(s["errors"] for s in ok) + lone["poisoning"]["errors"] + lone["extraction"]["errors"],
        "load_wall_s": round(crowd["wall_s"], 1),
        "server_rss_mb": {
            "before": round(mem0),
            "after": round(mem1),
            "per_session": round((mem1 - mem0) / max(1, len(sessions) + 2), 1),
        },
    }
    for kind in ("poisoning", "extraction"):
        mine = [s for s in ok if s["kind"] == kind]
        lat = [x for s in mine for x in s["latencies"]]
        res[kind] = {
            "lone_step_p50_s": pct(lone[kind]["latencies"], 0.5),
            "lone_prepare_s": round(lone[kind]["prepare_s"], 1),
            "crowd_step_p50_s": pct(lat, 0.5),
            "crowd_step_p95_s": pct(lat, 0.95),
            "crowd_prepare_p50_s": pct([s["prepare_s"] for s in mine], 0.5),
        }
    for kind in ("poisoning", "extraction"):
        sigs = run_signatures(cache / "cache", kind)  # the lone session's run is the oldest
        res[kind]["same_results_as_lone"] = bool(sigs) and all(x == sigs[0] for x in sigs)
        res[kind]["runs_compared"] = len(sigs)
    if failed:
        res["failed_pages"] = str(SHOTS)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
