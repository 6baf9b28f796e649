"""ragkit.train: everything that makes a model's weights, apart from the code that loads and runs them.

Nothing outside ragkit.train imports it (tests/test_architecture.py): a lesson that only runs a trained model
loads none of this.

| module | what it trains or scores | taught in |
|---|---|---|
| `splits` | the fixed train / held-out split of a question | 04 |
| `reranker` | the course cross-encoder, from MiniLM, listwise | 04 |
| `finetune` | the chat model, LoRA or full, loss on the answer | 09 |
| `gguf_lora` | a LoRA adapter written for llama.cpp | 09 |
| `records` | each specialist's training and held-out records | 09 |
| `heldout` | a specialist's held-out score, before and after | 09 |
| `specialists` | building a specialist (`make specialists`) | 09 |
"""
