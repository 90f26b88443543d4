"""User-facing errors: one clear line, no traceback.

Every error the engine raises on bad input is an :class:`EngineError`; the CLI prints
``error: <message>`` and exits non-zero, the app shows it with ``st.error``.
"""


class EngineError(Exception):
    """Base class of every error that is the user's to fix (bad input, missing model, ...)."""


class ConfigError(EngineError, ValueError):
    """A parameter, preset or config value is invalid; the message names the key."""


class UnknownNameError(ConfigError, KeyError):
    """A registry lookup failed; the message lists the valid names."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0]) if self.args else ""


class CorpusError(EngineError):
    """A corpus or query file is missing, empty, binary, non-UTF-8 or malformed."""


class ModelUnavailableError(EngineError):
    """A model's weights are not available offline, or failed their integrity check."""


class RunFileError(EngineError):
    """A run's events file is not an events file, or is damaged beyond a torn last line."""
