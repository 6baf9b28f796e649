"""The errors ragkit raises; each message says what to do next."""


class RagkitError(Exception):
    """Base class of every error ragkit raises on purpose."""


class CorpusError(RagkitError, ValueError):
    """A corpus or data file that cannot be used as it is."""


class EmptyQueryError(RagkitError, ValueError):
    """A query with no text to search for."""


class ConfigError(RagkitError, ValueError):
    """A setting that names no known backend or is malformed."""


class BackendError(RagkitError):
    """A model or store backend that cannot serve the request."""


class BackendUnreachable(BackendError):
    """A server-based backend that does not answer at its address."""


class ModelNotFound(BackendError):
    """A model the backend does not have (not pulled, not on disk)."""


class TrainingError(RagkitError):
    """A fine-tuning run that cannot go on as configured (out of memory, nothing to learn from)."""
