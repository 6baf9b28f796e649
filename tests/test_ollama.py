"""The Ollama adapters (OllamaChat, OllamaEmbedder) against tests/ollama_standin.py.

There is no Ollama server here: the stand-in speaks Ollama's HTTP API and runs no model.
"""

import json
import time
import urllib.request

import numpy as np
import pytest

from ragkit.errors import BackendError, BackendUnreachable, ModelNotFound
from ragkit.models.embeddings import OLLAMA_EMBED_BATCH, OllamaEmbedder
from ragkit.models.llm import OllamaChat
from ragkit.models.servers import ollama_client, pick_ollama_model
from tests.ollama_standin import REPLY_PREFIX, OllamaStandIn, SilentServer, embedding


def test_the_standin_speaks_ollamas_list_format(ollama_standin):
    import ollama

    listed = ollama.Client(host=ollama_standin.url).list()
    assert [m.model for m in listed.models] == ollama_standin.models
    assert listed.models[0].details.family == "llama"
    with urllib.request.urlopen(f"{ollama_standin.url}/api/version", timeout=5) as response:
        assert "version" in json.load(response)


def test_chat_picks_the_first_installed_model_of_the_preference_list(ollama_standin):
    # installed: llama3.2:1b and smollm2:135m; the preference list puts llama3.2:1b first
    assert OllamaChat(host=ollama_standin.url).name == "llama3.2:1b"
    assert OllamaChat(host=ollama_standin.url, preference=("smollm2:135m", "llama3.2:1b")).name == "smollm2:135m"


def test_a_model_listed_as_name_latest_is_found_by_its_bare_name(ollama_standin):
    assert pick_ollama_model(["nomic-embed-text:latest"], "nomic-embed-text", ()) == "nomic-embed-text"
    assert OllamaEmbedder(host=ollama_standin.url).name == "nomic-embed-text"


def test_an_explicit_model_that_is_installed_is_used(ollama_standin):
    assert OllamaChat("smollm2:135m", host=ollama_standin.url).name == "smollm2:135m"


def test_an_explicit_model_that_is_not_installed_says_how_to_pull_it(ollama_standin):
    with pytest.raises(ModelNotFound, match="`ollama pull qwen2.5:3b-instruct`"):
        OllamaChat("qwen2.5:3b-instruct", host=ollama_standin.url)


def test_no_model_of_the_preference_list_installed():
    with OllamaStandIn(models=["mistral:7b"]) as server:
        with pytest.raises(ModelNotFound, match="ollama pull qwen2.5:3b-instruct") as err:
            OllamaChat(host=server.url)
        assert "RAGKIT_LLM=ollama:<model>" in str(err.value)
        with pytest.raises(ModelNotFound, match="ollama pull"):
            OllamaChat(host=server.url, preference=("phi3:mini",))  # a one-name list works too


def test_a_server_that_is_down_names_the_url_and_ollama_serve(free_port):
    url = f"http://127.0.0.1:{free_port}"
    with pytest.raises(BackendUnreachable, match=f"no Ollama server answers at {url}") as err:
        OllamaChat(host=url)
    assert "ollama serve" in str(err.value)
    with pytest.raises(BackendUnreachable, match="ollama serve"):
        OllamaEmbedder(host=url)


def test_a_chat_reply_round_trips_text_and_token_counts(ollama_standin):
    chat = OllamaChat(host=ollama_standin.url)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "How many leave days?"}]
    reply = chat.chat(messages, max_tokens=50)
    assert reply.text == f"{REPLY_PREFIX} How many leave days?"
    assert reply.model == "llama3.2:1b"
    assert (reply.prompt_tokens, reply.completion_tokens) == (2 + 4, 3 + 4)  # words, as the stand-in counts
    assert reply.finish_reason == "stop"


def test_chat_sends_the_options_ollama_expects(ollama_standin):
    OllamaChat(host=ollama_standin.url).chat("hello", max_tokens=7, stop=["\n"])
    request = ollama_standin.calls("/api/chat")[-1]
    assert request["stream"] is False
    assert request["messages"] == [{"role": "user", "content": "hello"}]
    assert request["options"] == {"num_predict": 7, "temperature": 0.0, "seed": 0, "stop": ["\n"]}
    assert "format" not in request


def test_max_tokens_cuts_the_reply_and_says_so(ollama_standin):
    reply = OllamaChat(host=ollama_standin.url).chat("tell me everything about leave", max_tokens=2)
    assert reply.completion_tokens == 2 and reply.finish_reason == "length"


def test_a_json_schema_goes_as_format_and_the_reply_parses(ollama_standin):
    schema = {"type": "object", "properties": {"days": {"type": "integer"}}, "required": ["days"]}
    reply = OllamaChat(host=ollama_standin.url).chat("How many days?", json_schema=schema)
    assert ollama_standin.calls("/api/chat")[-1]["format"] == schema
    assert json.loads(reply.text) == {"days": 0}


def test_token_probabilities_are_refused_before_any_request_with_what_to_use_instead(ollama_standin):
    chat = OllamaChat(host=ollama_standin.url)
    sent = len(ollama_standin.calls("/api/chat"))
    with pytest.raises(BackendError, match="OpenAI-compatible"):
        chat.chat("yes or no?", max_tokens=1, logprobs=5)
    assert len(ollama_standin.calls("/api/chat")) == sent


def test_a_grammar_is_refused_before_any_request(ollama_standin):
    chat = OllamaChat(host=ollama_standin.url)
    sent = len(ollama_standin.calls("/api/chat"))
    with pytest.raises(BackendError, match="json_schema"):
        chat.chat("yes or no?", grammar='root ::= "yes" | "no"')
    assert len(ollama_standin.calls("/api/chat")) == sent


def test_a_model_removed_after_start_is_model_not_found():
    with OllamaStandIn(models=["llama3.2:1b"]) as server:
        chat = OllamaChat(host=server.url)
        server.models.clear()
        with pytest.raises(ModelNotFound, match="ollama pull llama3.2:1b"):
            chat.chat("hello")


def test_other_ollama_errors_are_backend_errors(ollama_standin):
    chat = OllamaChat("nomic-embed-text", host=ollama_standin.url)  # an embedding model cannot chat
    with pytest.raises(BackendError, match="400.*does not support chat"):
        chat.chat("hello")


def test_embedder_returns_unit_rows_of_the_right_dim(ollama_standin):
    embedder = OllamaEmbedder(host=ollama_standin.url)
    vectors = embedder.embed_passages(["annual leave", "sick leave", "VPN"])
    assert embedder.dim == ollama_standin.dim
    assert vectors.shape == (3, ollama_standin.dim) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_embedder_keeps_the_direction_of_the_servers_vectors(ollama_standin):
    vector = OllamaEmbedder(host=ollama_standin.url).embed_queries(["annual leave"])[0]
    raw = np.array(embedding("annual leave", ollama_standin.dim))
    assert np.allclose(vector, raw / np.linalg.norm(raw), atol=1e-6)


def test_embedder_of_no_texts_is_an_empty_matrix(ollama_standin):
    embedder = OllamaEmbedder(host=ollama_standin.url)
    sent = len(ollama_standin.calls("/api/embed"))
    assert embedder.embed_queries([]).shape == (0, ollama_standin.dim)
    assert len(ollama_standin.calls("/api/embed")) == sent


def test_ollama_chat_through_ragkit_models(fresh_models, monkeypatch, ollama_standin):
    monkeypatch.setenv("RAGKIT_LLM", "ollama")
    monkeypatch.setenv("RAGKIT_OLLAMA_HOST", ollama_standin.url)
    chat = fresh_models.chat_model()
    assert isinstance(chat, OllamaChat) and chat.name == "llama3.2:1b"
    assert fresh_models.chat_model() is chat
    assert chat.chat("hi").text == f"{REPLY_PREFIX} hi"


def test_a_named_ollama_model_through_ragkit_models(fresh_models, monkeypatch, ollama_standin):
    monkeypatch.setenv("RAGKIT_LLM", "ollama:smollm2:135m")
    monkeypatch.setenv("OLLAMA_HOST", ollama_standin.url.removeprefix("http://"))  # Ollama's own variable
    assert fresh_models.chat_model().name == "smollm2:135m"


def test_ollama_embedder_through_ragkit_models(fresh_models, monkeypatch, ollama_standin):
    monkeypatch.setenv("RAGKIT_EMBEDDER", "ollama:nomic-embed-text")
    monkeypatch.setenv("RAGKIT_OLLAMA_HOST", ollama_standin.url)
    embedder = fresh_models.embedder()
    assert isinstance(embedder, OllamaEmbedder)
    assert embedder.embed_passages(["leave"]).shape == (1, ollama_standin.dim)


def test_ragkit_models_with_ollama_down(fresh_models, monkeypatch, free_port):
    monkeypatch.setenv("RAGKIT_LLM", "ollama")
    monkeypatch.setenv("RAGKIT_OLLAMA_HOST", f"127.0.0.1:{free_port}")
    with pytest.raises(BackendUnreachable, match=f"http://127.0.0.1:{free_port}"):
        fresh_models.chat_model()


@pytest.mark.parametrize("backend", [OllamaChat, OllamaEmbedder])
def test_a_server_that_never_answers_times_out_and_names_the_setting(backend):
    with SilentServer() as server:
        started = time.perf_counter()
        with pytest.raises(BackendUnreachable, match=f"Ollama at {server.url} did not answer within 0.5 s") as err:
            backend(host=server.url, timeout=0.5)
        assert time.perf_counter() - started < 5
    assert "RAGKIT_TIMEOUT" in str(err.value)


def test_ragkit_timeout_reaches_the_ollama_client(fresh_models, monkeypatch):
    monkeypatch.setenv("RAGKIT_LLM", "ollama")
    monkeypatch.setenv("RAGKIT_TIMEOUT", "0.5")
    with SilentServer() as server:
        monkeypatch.setenv("RAGKIT_OLLAMA_HOST", server.url)
        with pytest.raises(BackendUnreachable, match="within 0.5 s"):
            fresh_models.chat_model()


def test_a_reply_that_hangs_after_the_model_list_times_out_too(ollama_standin):
    chat = OllamaChat(host=ollama_standin.url, timeout=0.5)
    with SilentServer() as server:
        chat._client = ollama_client(server.url, 0.5)  # the server stops answering after the model list
        with pytest.raises(BackendUnreachable, match="did not answer within 0.5 s"):
            chat.chat("hello")


def test_the_embedder_sends_a_long_list_in_batches(ollama_standin):
    embedder = OllamaEmbedder(host=ollama_standin.url)
    texts = [f"text {number}" for number in range(2 * OLLAMA_EMBED_BATCH + 3)]
    sent = len(ollama_standin.calls("/api/embed"))
    vectors = embedder.embed_passages(texts)
    batches = [len(call["input"]) for call in ollama_standin.calls("/api/embed")[sent:]]
    assert batches == [OLLAMA_EMBED_BATCH, OLLAMA_EMBED_BATCH, 3]
    assert np.allclose(vectors[-1], embedder.embed_queries([texts[-1]])[0])
