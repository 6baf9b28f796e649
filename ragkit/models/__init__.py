"""ragkit.models: the models behind one setting each, and what they need to run.

| module | what it holds | taught in |
|---|---|---|
| `llm` | chat models behind one interface: llama.cpp, Ollama, OpenAI-compatible, transformers | 00 |
| `servers` | Ollama and OpenAI-compatible servers: clients and errors that say what to do | 00 |
| `ladder` | the model ladder's GGUF files (Qwen 0.5B and 1.5B from part wheels) | 00 |
| `cache` | the model cache: replies, embeddings and scores kept on disk | 00 |
| `resolve` | the chat model, embedder and reranker the settings name, loaded once | 00 |
| `embeddings` | embedders: text to vectors | 00 |
| `replies` | reading a chat model's replies: JSON lists, numbered steps, answers | 03 |
| `rerankers` | rerankers: a cross-encoder, a bi-encoder, a chat model scoring or judging | 04 |
| `jobs` | each specialist job's prompt and how its replies are read | 09 |
| `finetuned` | loading a fine-tuned model and its base | 09 |
| `specialists` | a specialist: a small model taught one job, loaded from its folder | 09 |
| `roles` | the model each job's setting names: a specialist or a chat model | 09 |
"""

from ragkit.models.embeddings import Embedder, unit_rows
from ragkit.models.finetuned import finetune_record
from ragkit.models.jobs import answerer_messages, parse_label
from ragkit.models.ladder import QWEN, qwen_path
from ragkit.models.llm import ChatModel, ChatReply, LlamaCppChat, OllamaChat, OpenAIChat, TransformersChat
from ragkit.models.replies import parse_steps, step_key
from ragkit.models.rerankers import BiEncoderReranker, CrossEncoderReranker, LLMReranker, LLMScorer, RelevanceJudge
from ragkit.models.resolve import chat_model, describe, embedder, reranker
from ragkit.models.roles import relevance_model, rewriter_model, role_model
from ragkit.models.specialists import COMMITTED_DIR, load_specialist, specialist, specialist_record

__all__ = ["Embedder", "unit_rows", "finetune_record", "answerer_messages", "parse_label", "QWEN", "qwen_path",
           "ChatModel", "ChatReply", "LlamaCppChat", "OllamaChat", "OpenAIChat", "TransformersChat", "parse_steps",
           "step_key", "BiEncoderReranker", "CrossEncoderReranker", "LLMReranker", "LLMScorer", "RelevanceJudge",
           "chat_model", "describe", "embedder", "reranker", "relevance_model", "rewriter_model", "role_model",
           "COMMITTED_DIR", "load_specialist", "specialist", "specialist_record"]
