"""Training: everything that makes a model's weights, apart from the code that loads and runs them.

Nothing outside ragkit.train imports it (tests/test_architecture.py): a lesson that only runs a trained model
loads none of this.

| module | what it trains or scores | taught in |
|---|---|---|
| `ragkit.train.reranker` | the course cross-encoder, from MiniLM, listwise | lessons/04_reranking.ipynb |
| `ragkit.train.finetune` | the chat model, LoRA or full, loss on the answer | lessons/09_specialists.ipynb |
| `ragkit.train.records` | each specialist's training and held-out records | lessons/09_specialists.ipynb |
| `ragkit.train.heldout` | a specialist's held-out score, before and after | lessons/09_specialists.ipynb |
| `ragkit.train.specialists` | building a specialist (`make specialists`) | lessons/09_specialists.ipynb |
| `ragkit.train.gguf_lora` | a LoRA adapter written for llama.cpp | lessons/09_specialists.ipynb |
| `ragkit.train.splits` | the fixed train / held-out split of a question | lessons/04_reranking.ipynb |
"""
