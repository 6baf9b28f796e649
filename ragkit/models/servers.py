"""Talking to model servers (Ollama, OpenAI-compatible): their clients, which model to pick, and their
errors turned into ragkit errors that say what to do. Chat models and embedders both use it.

Taught in lessons/00_setup.ipynb.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Sequence

from ragkit.config import DEFAULT_TIMEOUT
from ragkit.errors import BackendError, BackendUnreachable, ModelNotFound


def ollama_client(host: str, timeout: float):
    """The official ollama client, giving up on a request after timeout seconds (its default waits forever)."""
    import ollama

    return ollama.Client(host=host, timeout=timeout)


def installed_ollama_models(client, host: str, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
    """Names of the models an Ollama server has pulled; a clear error when it does not answer."""
    with ollama_errors(host, "", timeout):
        return [m.model for m in client.list().models]


def pick_ollama_model(installed: Sequence[str], wanted: str, preference: Sequence[str]) -> str:
    """The wanted model if pulled, else the first pulled model of the preference list."""
    available = set(installed) | {name.removesuffix(":latest") for name in installed}
    if wanted:
        if wanted in available:
            return wanted
        raise ModelNotFound(f"Ollama has no model {wanted!r}: run `ollama pull {wanted}`")
    for name in preference:
        if name in available:
            return name
    suggested = (list(preference[1:2]) or list(preference[:1]) or ["<model>"])[0]
    raise ModelNotFound(f"Ollama has none of {', '.join(preference)}: run `ollama pull {suggested}` "
                        "or name a model with RAGKIT_LLM=ollama:<model>")


@contextmanager
def ollama_errors(host: str, model: str, timeout: float = DEFAULT_TIMEOUT):
    """Turn the ollama client's connection, timeout and 404 errors into ragkit errors that say what to do."""
    import httpx
    import ollama

    try:
        yield
    except httpx.TimeoutException as err:
        raise BackendUnreachable(f"Ollama at {host} {no_answer_within(timeout)}") from err
    except ConnectionError as err:
        raise BackendUnreachable(
            f"no Ollama server answers at {host}: start it with `ollama serve` (install it from "
            "ollama.com), or set OLLAMA_HOST / RAGKIT_OLLAMA_HOST to where it runs") from err
    except ollama.ResponseError as err:
        if err.status_code == 404:
            raise ModelNotFound(f"Ollama has no model {model!r}: run `ollama pull {model}`") from err
        raise BackendError(f"Ollama at {host} answered {err.status_code}: {err.error}") from err


@contextmanager
def openai_errors(base_url: str, model: str, timeout: float = DEFAULT_TIMEOUT):
    """Turn the openai client's connection, timeout, auth and 404 errors into ragkit errors."""
    import openai

    try:
        yield
    except openai.APITimeoutError as err:  # before APIConnectionError, its base class
        raise BackendUnreachable(f"the server at {base_url} {no_answer_within(timeout)}") from err
    except openai.APIConnectionError as err:
        raise BackendUnreachable(f"no OpenAI-compatible server answers at {base_url}: start it, "
                                 "or fix OPENAI_BASE_URL") from err
    except openai.AuthenticationError:
        # from None: the client's message quotes part of the key
        raise BackendError("the endpoint refused the key in OPENAI_API_KEY: set a valid one") from None
    except openai.NotFoundError as err:
        raise ModelNotFound(f"the endpoint at {base_url} has no model {model!r}: name one it serves") from err
    except openai.APIStatusError as err:
        raise BackendError(f"the endpoint at {base_url} answered {err.status_code}: {err.message}") from err


def no_answer_within(timeout: float) -> str:
    """The end of a timeout's message: how long ragkit waited and the setting that changes it."""
    return (f"did not answer within {timeout:g} s: check that it runs and is not overloaded (a first "
            "request also loads the model), or allow more seconds with RAGKIT_TIMEOUT")
