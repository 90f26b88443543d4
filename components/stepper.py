"""One Step / Play / Pause / Reset control for both labs: a fragment that plays a run round by round.

The run lives in ``session_state[<state>_run]``; ``<state>_playing`` and ``<state>_speed`` hold the play
state and the seconds between steps while playing. While playing, the fragment reruns itself on a timer
and steps once per rerun; Step, Reset and the end of the run trigger one full rerun so the panels outside
the fragment (tabs, exports) follow.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import streamlit as st


class HeldRerun:
    """Drawing calls made from inside a step (a live view's callbacks) that never cut the step.

    Streamlit stops a script at its next drawing call when the user clicks meanwhile (it raises a stop or rerun
    there). Called as ``draw(lambda: box.text(...))``, this catches that, draws nothing more, and lets the work
    go on; :meth:`release`, called once the step is done, raises what it held — the click is answered after
    the step, never by abandoning it halfway."""

    def __init__(self) -> None:
        self.held: BaseException | None = None

    def __call__(self, show: Callable[[], object]) -> None:
        if self.held is not None:
            return
        from streamlit.runtime.scriptrunner_utils.exceptions import ScriptControlException

        try:
            show()
        except ScriptControlException as e:
            self.held = e

    def release(self) -> None:
        """Raise the stop or rerun held while the step ran, if any."""
        if self.held is not None:
            held, self.held = self.held, None
            raise held


def stepper(
    state: str,
    keys: str,
    *,
    step_once: Callable[[], None],
    reset: Callable[[], None],
    status: Callable[[Any, str], None],
    body: Callable[[Any], None],
    speed_label: str,
    speed_range: tuple[float, float],
    blocked: Callable[[Any], bool] = lambda r: False,
    extra: Optional[Callable[[Any, Any], None]] = None,
) -> None:
    """Draw the speed slider and the live fragment. ``status(run, word)`` writes the status line (``word``:
    run complete / failed / playing / paused) into the column it is called in; ``body(run)`` draws the live
    panels; ``blocked(run)``: the run cannot step (e.g. it failed); ``extra(run, column)`` adds a button.
    ``keys`` prefixes the button keys (``btn_<keys>step`` …)."""
    ss = st.session_state
    run = ss[f"{state}_run"]
    playing = ss[f"{state}_playing"] and not run.done

    def play() -> None:
        ss[f"{state}_playing"] = True

    def pause() -> None:
        ss[f"{state}_playing"] = False

    def ask_step() -> None:
        ss[f"{state}_step_asked"] = True

    @st.fragment(run_every=ss[f"{state}_speed"] if playing else None)
    def panel() -> None:
        r = ss[f"{state}_run"]
        if r is None:
            return
        if ss[f"{state}_playing"] != playing:
            st.rerun()  # Play/Pause changed: a full rerun starts or stops the fragment's timer
        stuck = blocked(r)
        # a Step click is known before the buttons are drawn (its callback runs first), so they are drawn disabled
        # while its round streams: they stayed clickable, and a click meanwhile queued another round
        stepped = bool(ss.pop(f"{state}_step_asked", False)) and not r.done and not stuck
        c = st.columns([1, 1, 1, 1, 8], gap="small", vertical_alignment="center")
        c[0].button("Step", on_click=ask_step, disabled=r.done or playing or stuck or stepped, key=f"btn_{keys}step")
        if playing:
            c[1].button("Pause", on_click=pause, key=f"btn_{keys}pause")
        else:
            c[1].button("Play", on_click=play, disabled=r.done or stuck or stepped, key=f"btn_{keys}play")
        if c[2].button("Reset", disabled=stepped, key=f"btn_{keys}reset"):
            reset()
            st.rerun()
        if extra is not None:
            with c[3]:
                extra(r, c[3])
        line = c[4].empty()  # the status line says what is happening now, not what was (it used to lag a step)

        def show(word: str) -> None:
            with line.container():
                status(r, word)

        if stepped or playing:
            if not r.done:
                show(("playing" if playing else "stepping") + " — the next round streams below")
                step_once()
            if stepped:
                st.rerun()  # a full rerun, so the tabs below follow the step
            if r.done or not ss[f"{state}_playing"]:
                ss[f"{state}_playing"] = False
                st.rerun()  # finished or stopped: end the timer, refresh the panels outside
            stuck = blocked(r)
        show("run complete" if r.done else ("failed" if stuck else ("playing" if playing else "paused")))
        body(r)

    st.slider(speed_label, *speed_range, key=f"{state}_speed", step=0.1)
    panel()
