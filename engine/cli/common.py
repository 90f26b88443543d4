"""What every command shares: progress on stderr, JSON cleaning, and the checks made before any work."""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from typing import Mapping, Any

from ..registry import REGISTRIES, registered  # noqa: F401 - re-exported: the CLI's help and its tests use them

_partial_line = {"open": False}


HEARTBEAT_S = 60.0  # into a log (no terminal): a line per finished stage, and one a minute inside a long stage


def _progress_printer(enabled: bool, heartbeat: float = HEARTBEAT_S):
    """Progress on stderr: a live line on a terminal; into a file or pipe, one line per finished stage and one
    every ``heartbeat`` seconds while a stage runs (a background job's log shows where it is)."""
    state = {"stage": None, "t": 0.0, "beat": time.monotonic()}
    tty = sys.stderr.isatty()

    def cb(stage: str, done: int, total: int) -> None:
        if not enabled:
            return
        now = time.monotonic()
        finished = done >= total
        if not tty:
            if finished and stage != state["stage"]:
                state.update(stage=stage, beat=now)
                sys.stderr.write(f"{stage}: {done}/{total}\n")
            elif not finished and now - state["beat"] >= heartbeat:
                state["beat"] = now
                sys.stderr.write(f"{stage}: {done}/{total} …\n")
                sys.stderr.flush()
            return
        if stage != state["stage"] or finished or now - state["t"] > 0.5:
            state.update(stage=stage, t=now)
            sys.stderr.write(f"\r{stage}: {done}/{total}{' ' * 10}" + ("\n" if finished else ""))
            sys.stderr.flush()
            _partial_line["open"] = not finished

    return cb


def _clean(obj: Any) -> Any:
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, Mapping):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def check_args(args) -> None:
    """Refuse bad values before any work starts: an output folder that cannot be written, a limit that is
    not positive, an empty list."""
    from ..errors import ConfigError
    from ..paths import writable_dir

    if getattr(args, "out", None):
        writable_dir(args.out, "--out")
    v = getattr(args, "limit", None)  # the other counts are checked by their configs, with their names
    if v is not None and v < 1:
        raise ConfigError(f"--limit must be at least 1 (got {v}); leave it out to use every question")
    for name in ("corpora", "retrievers", "query_sets", "targets", "attacks", "configurations", "kbs"):
        v = getattr(args, name, None)
        if v is not None and not [x for x in v.split(",") if x.strip()]:
            raise ConfigError(f"--{name.replace('_', '-')} is empty: give at least one name")


def executor_of(args: Any, meta: dict | None = None) -> Any:
    """The :class:`~engine.executors.ExecutorConfig` of a sweep or comparison: the preset's ``executor:``
    section, with the options given on top (``--executor``, ``--ray-address``, ``--workers``, …). Asking for
    Ray without Ray installed is one clear error, before any work."""
    from ..executors import ExecutorConfig, checked

    from .config_options import config_values

    values = (meta or {}).get("executor", ExecutorConfig()).to_dict()
    values.update(config_values(args, ExecutorConfig))
    return checked(ExecutorConfig.from_dict(values, where="executor"))


def add_executor_args(sp: Any) -> None:
    """Every :class:`~engine.executors.ExecutorConfig` field as an option (``--executor``, ``--ray-address``,
    ``--workers``, ``--cpus-per-cell``, ``--retries``): they override a preset's ``executor:`` section."""
    from ..executors import ExecutorConfig
    from .config_options import add_config_options

    add_config_options(sp, ExecutorConfig)


def load_kind_preset(name: str, kind: str, quiet: bool) -> tuple[Any, dict]:
    """A preset that must be of ``kind`` (one clear error otherwise) and its meta (name, description,
    executor); its description goes to stderr."""
    from ..config import load_preset
    from ..errors import ConfigError

    got, cfg, meta = load_preset(name)
    if got != kind:
        raise ConfigError(
            f"preset {name!r} is a {got} preset, not a {kind} preset"
            + ("; run it with 'python -m engine run'" if kind == "sweep" else "")
        )
    if not quiet:
        print(f"preset {meta.get('name')}: {meta.get('description', '').strip()}", file=sys.stderr)
    return cfg, meta


def finish_run(run: Any, args: Any, show: Any, warn: Any = None, extra: Any = None) -> int:
    """Run to the end and close; then the summary (with ``run_id`` and ``out_dir``): ``warn(summary)`` for
    warnings on stderr, ``show(summary)`` unless quiet with ``--json``, and the JSON line with ``--json``."""
    import json

    try:
        run.run()
    finally:
        run.close()
    s = {"run_id": run.run_id, **run.summary(), **(extra(run) if extra is not None else {})}
    if run.out_dir:
        s["out_dir"] = str(run.out_dir)
    if warn is not None:
        warn(s)
    if not args.json or not args.quiet:
        show(s)
    if args.json:
        print(json.dumps(_clean(s)))
    return 0


def json_option(raw: str | None, name: str, example: str) -> Any:
    """A JSON option's value (None when not given); ``@FILE`` reads it from a file. Invalid JSON, JSON nested
    past what can be read, or an unreadable file is one ConfigError naming ``--name`` with an example."""
    import json

    from ..errors import ConfigError

    if raw is None or raw == "":
        return None
    text = raw
    if raw.startswith("@"):
        from pathlib import Path

        try:
            text = Path(raw[1:]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"--{name}: cannot read {raw[1:]!r} ({getattr(e, 'strerror', None) or e})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"--{name} is not valid JSON ({e.msg} at character {e.pos + 1}); e.g. {example}") from None
    except RecursionError:
        raise ConfigError(f"--{name}: the JSON is nested too deep to read") from None


# ------------------------------------------------------------------ help text from the registries
# ``{registered:KIND}`` in a help string becomes the names registered under KIND when the help is shown: the
# lists never drift from the plugins, and building the parser imports no plugin (``--help`` of one command
# imports only what its own help names).
_REGISTERED = re.compile(r"\{registered:([a-z-]+)\}")


class RegistryHelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, with ``{registered:KIND}`` in a help string filled from the registry."""

    def _expand_help(self, action: argparse.Action) -> str:
        return _REGISTERED.sub(lambda m: ", ".join(registered(m.group(1))), super()._expand_help(action))


class Parser(argparse.ArgumentParser):
    """The engine's argument parser: help strings may name a registry (:class:`RegistryHelpFormatter`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", RegistryHelpFormatter)
        super().__init__(*args, **kwargs)
