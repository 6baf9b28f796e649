"""ragkit.generate: readers, which turn a question and its passages into a short answer.

| module | what it holds | taught in |
|---|---|---|
| `reader` | what every reader answers with, and the Reader interface | 06 |
| `answering` | the chat model as a reader, prompted with one worked example | 08 |
| `spans` | a reply made a span copied from the passages | 09 |
| `reader_specialist` | the reader specialist, and the reader the setting names | 09 |
"""

from ragkit.generate.answering import ChatReader, read, reader_prompt, short_answer
from ragkit.generate.reader import Reader, ReaderAnswer
from ragkit.generate.reader_specialist import SpecialistReader, reader_model, reader_reply, specialist_reader

__all__ = ["ChatReader", "read", "reader_prompt", "short_answer", "Reader", "ReaderAnswer", "SpecialistReader",
           "reader_model", "reader_reply", "specialist_reader"]
