"""ragkit.models.llm: the real local model (SmolLM2 in xllamacpp), in-process and over its OpenAI API."""

import json
import os
import time

import pytest

from ragkit import load_docs, models
from ragkit.errors import BackendError, BackendUnreachable
from ragkit.models.llm import SMOLLM2_FILE, ChatReply, LlamaCppChat, OpenAIChat, smollm2_path
from tests.ollama_standin import SilentServer

YES_NO = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
          "required": ["answer"]}
YES_NO_GRAMMAR = 'root ::= "yes" | "no"'
BROKEN_GRAMMAR = "root ::= ((("
QUESTION = "Is Berlin in Germany? Answer yes or no."


@pytest.fixture(scope="module")
def openai_chat(local_chat):
    """The OpenAI client talking to the local model's real HTTP server on 127.0.0.1."""
    return OpenAIChat("smollm2", base_url=local_chat.base_url, api_key=None)


@pytest.mark.model
def test_the_default_chat_model_is_local_smollm2(local_chat):
    assert isinstance(local_chat, LlamaCppChat)
    assert local_chat.name == SMOLLM2_FILE


@pytest.mark.model
def test_chat_model_is_loaded_once_and_reused(local_chat):
    assert models.chat_model() is local_chat
    assert models.chat_model() is models.chat_model()


@pytest.mark.model
def test_local_completion_is_not_empty_and_counts_tokens(local_chat):
    reply = local_chat.chat("Name a colour.", max_tokens=8)
    assert isinstance(reply, ChatReply)
    assert reply.text.strip()
    assert reply.prompt_tokens > 0 and 0 < reply.completion_tokens <= 8
    assert reply.finish_reason in ("stop", "length")


@pytest.mark.model
def test_max_tokens_cuts_the_reply(local_chat):
    reply = local_chat.chat("Write a long story about a dragon.", max_tokens=3)
    assert reply.completion_tokens == 3 and reply.finish_reason == "length"


@pytest.mark.model
def test_temperature_zero_is_deterministic(local_chat):
    messages = [{"role": "system", "content": "You are brief."}, {"role": "user", "content": "Say hello."}]
    assert local_chat.chat(messages, max_tokens=6).text == local_chat.chat(messages, max_tokens=6).text


@pytest.mark.model
def test_the_local_model_serves_on_loopback_only(local_chat):
    assert local_chat.base_url.startswith("http://127.0.0.1:") and local_chat.base_url.endswith("/v1")


@pytest.mark.model
def test_openai_client_against_the_local_http_server(openai_chat):
    reply = openai_chat.chat(QUESTION, max_tokens=8)
    assert isinstance(reply, ChatReply) and reply.text.strip()
    assert reply.model == "smollm2"
    assert reply.prompt_tokens > 0 and 0 < reply.completion_tokens <= 8


@pytest.fixture(params=["in-process", "openai-http"])
def either_path(request, local_chat, openai_chat):
    """The local model called in-process, then through the openai client over HTTP."""
    return local_chat if request.param == "in-process" else openai_chat


@pytest.mark.model
def test_json_schema_constrains_the_reply(either_path):
    reply = either_path.chat(QUESTION, max_tokens=30, json_schema=YES_NO)
    assert json.loads(reply.text)["answer"] in ("yes", "no")


@pytest.mark.model
def test_gbnf_grammar_constrains_the_reply(either_path):
    assert either_path.chat(QUESTION, max_tokens=5, grammar=YES_NO_GRAMMAR).text in ("yes", "no")


@pytest.mark.model
def test_logprobs_give_the_first_tokens_likeliest_alternatives_the_reply_first(either_path):
    reply = either_path.chat(QUESTION, max_tokens=1, logprobs=5)
    tokens, logprobs = zip(*reply.top_logprobs)
    assert len(tokens) == 5 and list(logprobs) == sorted(logprobs, reverse=True) and logprobs[0] <= 0
    assert tokens[0] == reply.text  # greedy: the reply is the likeliest first token
    assert either_path.chat(QUESTION, max_tokens=1).top_logprobs == ()


@pytest.mark.model
@pytest.mark.parametrize("path, message", [("in-process", "llama.cpp refused the request"), ("openai-http", "400")])
def test_a_broken_grammar_is_a_backend_error(local_chat, openai_chat, path, message):
    chat = local_chat if path == "in-process" else openai_chat
    with pytest.raises(BackendError, match=message):
        chat.chat(QUESTION, max_tokens=5, grammar=BROKEN_GRAMMAR)


@pytest.mark.model
def test_openai_backend_through_ragkit_models(fresh_models, monkeypatch, local_chat):
    monkeypatch.setenv("RAGKIT_LLM", "openai:smollm2")
    monkeypatch.setenv("OPENAI_BASE_URL", local_chat.base_url)
    chat = fresh_models.chat_model()
    assert isinstance(chat, OpenAIChat) and chat.name == "smollm2"
    assert chat.chat("Say hello.", max_tokens=5).text.strip()


def test_an_endpoint_that_is_down_is_unreachable_and_named(free_port):
    url = f"http://127.0.0.1:{free_port}/v1"
    with pytest.raises(BackendUnreachable, match=f"no OpenAI-compatible server answers at {url}"):
        OpenAIChat("m", base_url=url, api_key=None).chat("hello", max_tokens=2)


def test_an_endpoint_that_never_answers_times_out_and_names_the_setting():
    with SilentServer() as server:
        url = f"{server.url}/v1"
        started = time.perf_counter()
        with pytest.raises(BackendUnreachable, match=f"{url} did not answer within 0.5 s.*RAGKIT_TIMEOUT"):
            OpenAIChat("m", base_url=url, api_key=None, timeout=0.5).chat("hello", max_tokens=2)
        assert time.perf_counter() - started < 5  # two tries (max_retries=1) of 0.5 s and a short back-off


def test_ragkit_timeout_reaches_the_openai_client(fresh_models, monkeypatch, free_port):
    monkeypatch.setenv("RAGKIT_LLM", "openai:m")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{free_port}/v1")
    monkeypatch.setenv("RAGKIT_TIMEOUT", "7.5")
    assert fresh_models.chat_model()._client.timeout == 7.5
    monkeypatch.delenv("RAGKIT_TIMEOUT")
    assert fresh_models.chat_model()._client.timeout == 120


def test_openai_without_key_or_base_url_is_an_error(fresh_models):
    with pytest.raises(BackendError, match="OPENAI_API_KEY"):
        OpenAIChat("gpt-4o-mini", base_url=None, api_key=None)
    with pytest.raises(BackendError, match="OPENAI_API_KEY"):
        fresh_models.chat_model("openai")


def test_repr_of_openai_chat_never_shows_the_key():
    secret = "sk-test-abcdef0123456789"
    chat = OpenAIChat("gpt-4o-mini", base_url=None, api_key=secret)
    assert secret not in repr(chat) and "gpt-4o-mini" in repr(chat)


def _resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.model
def test_memory_stays_flat_over_many_long_prompts(local_chat):
    # llama.cpp's server kept every finished prompt's state in RAM (up to 8 GiB): these 6 different
    # 750-token prompts grew the process by 89 MiB before ragkit turned that store off, 16 MiB after.
    # The full target (200 calls of ~1,000 tokens, < 150 MiB) is benchmarks/chat_memory.py's: `make bench-memory`.
    texts = [doc.text for doc in load_docs()]
    local_chat.chat("warm up", max_tokens=1)
    before = _resident_mb()
    for number in range(6):
        local_chat.chat(" ".join(texts[number * 5:number * 5 + 10])[:3_000] + "\n\nWhich topic?", max_tokens=1)
    assert _resident_mb() - before < 60


@pytest.mark.model
def test_a_reply_does_not_depend_on_the_thread_count():
    # the model store reuses replies across runs with RAGKIT_THREADS=1 and 2: that needs the same reply
    two_threads, one_thread = (LlamaCppChat(smollm2_path(), threads=threads) for threads in (2, 1))
    for prompt in ("Name three rivers of Europe.", "Split into steps: who founded the city where Pushkin was born?"):
        assert two_threads.chat(prompt, max_tokens=40).text == one_thread.chat(prompt, max_tokens=40).text
