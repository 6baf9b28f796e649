"""Checks of lesson 00's exercises (setup: a chat call of your own, a similarity matrix, a config file)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ragkit.config import CONFIG_FILE, Settings, load_settings
from ragkit.errors import RagkitError
from ragkit.exercises.checking import ExerciseFailed, exercise, require
from ragkit.models.llm import ChatReply

MAX_TOKENS = 80  # the limit exercise 0.1 asks for
LESSON_SCHEMA_KEYS = {"topic", "days"}  # the keys of section 2's schema; the exercise asks for a schema of your own
JSON_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "array": list,
              "object": dict}
TRANSLATION = (3, 4, 5, 0, 1, 2)  # sentences[i + 3] translates sentences[i], and the other way round
ROUNDING = 0.005  # half a unit of the matrix's printed second digit: a margin this small may be a tie


@exercise("0.1", names=("own", "answer_schema", "own_json"),
          expects="the chat model's reply to your question, your JSON schema, and the reply that schema constrained")
def own_question(own, answer_schema, own_json):
    """A reply within the token limit with its time, and a JSON reply with the keys and types of your own schema."""
    require_reply(own, "own")
    require(own.completion_tokens <= MAX_TOKENS,
            f"`own` has {own.completion_tokens} tokens: ask with max_tokens={MAX_TOKENS}")
    require(own.seconds > 0, "`own` took no time: store the reply of a real llm.chat call, whose seconds give the "
                             "tokens per second")
    properties = schema_properties(answer_schema)
    require_reply(own_json, "own_json")
    require_schema_kept(parsed_json(own_json), answer_schema, properties)


def require_reply(reply, name: str) -> None:
    """Fail unless the named value is a ChatReply."""
    require(isinstance(reply, ChatReply), f"`{name}` is a {type(reply).__name__}: store what llm.chat(...) returned "
                                          "(a ChatReply, with its token counts and time), not only its text")


def schema_properties(schema) -> dict:
    """The properties of an object schema of your own that lists its keys as required."""
    require(isinstance(schema, Mapping) and schema.get("type") == "object"
            and isinstance(schema.get("properties"), Mapping) and schema["properties"],
            '`answer_schema` is not an object schema: write {"type": "object", "properties": {...}, '
            '"required": [...]}, as section 2 does')
    properties = dict(schema["properties"])
    require(set(properties) != LESSON_SCHEMA_KEYS,
            "`answer_schema` has section 2's keys (topic, days): write a schema of your own for your question")
    required = schema.get("required") or []
    require(required and set(required) <= set(properties),
            "`answer_schema` lists no keys under required (or names keys it does not describe): without "
            "required, the model may leave any key out")
    return properties


def parsed_json(reply: ChatReply) -> dict:
    """The reply's text as a JSON object."""
    try:
        value = json.loads(reply.text)
    except ValueError:
        if reply.finish_reason == "length":
            raise ExerciseFailed("`own_json` stopped at max_tokens before its JSON closed: give it more tokens, or "
                                 'cap its strings with "maxLength" in the schema') from None
        raise ExerciseFailed("`own_json` is not JSON: pass your schema as llm.chat(..., "
                             "json_schema=answer_schema)") from None
    require(isinstance(value, dict), "`own_json` is JSON but not an object: was it asked with "
                                     "json_schema=answer_schema?")
    return value


def require_schema_kept(value: dict, schema: Mapping, properties: dict) -> None:
    """Fail unless the object has the schema's required keys, no others, each of the declared type."""
    missing, unknown = set(schema["required"]) - set(value), set(value) - set(properties)
    require(not missing and not unknown,
            f"`own_json` has the keys {sorted(value)}, and `answer_schema` describes {sorted(properties)}: ask "
            "with json_schema=answer_schema, so that the sampler can only write your keys")
    for key, spec in properties.items():
        expected = JSON_TYPES.get(spec.get("type")) if isinstance(spec, Mapping) else None
        if key in value and expected:
            fits = isinstance(value[key], expected) and not (isinstance(value[key], bool) and expected is not bool)
            require(fits, f"`own_json` gives {key} as {value[key]!r}, and `answer_schema` declares it "
                          f"{spec['type']}: ask with json_schema=answer_schema")


@exercise("0.2", names=("sentences", "matrix", "closest_to_own"),
          expects="three English sentences then their translations in the same order, the matrix of their "
                  "cosines, and True or False: is every sentence closest to its own translation?")
def similarity_matrix(sentences, matrix, closest_to_own):
    """Six sentences, a symmetric matrix of cosines with 1 on its diagonal, and an answer the matrix bears out."""
    require(isinstance(sentences, (list, tuple)) and len(sentences) == len(TRANSLATION)
            and all(isinstance(text, str) and text.strip() for text in sentences)
            and len(set(sentences)) == len(sentences),
            "`sentences` should be six different sentences: three in English, then their translations in the same "
            "order")
    cosines = cosine_matrix(matrix)
    require(isinstance(closest_to_own, (bool, np.bool_)), f"`closest_to_own` is {closest_to_own!r}: store True "
                                                          "or False")
    margins = translation_margins(cosines)
    worst = int(np.argmin(margins))
    if margins[worst] < -ROUNDING:
        require(not closest_to_own, f"`closest_to_own` is True, but {sentences[worst]!r} is closer to another "
                                    f"sentence than to its translation (row {worst} of `matrix`): in each row, "
                                    "compare the translation's cosine with the best of the others")
    elif margins[worst] > ROUNDING:
        require(closest_to_own, "`closest_to_own` is False, but in every row of `matrix` the translation has the "
                                "highest cosine after the sentence itself")


def cosine_matrix(matrix) -> np.ndarray:
    """The matrix as floats, checked to be the 6×6 cosines of the sentences with one another."""
    try:
        cosines = np.asarray(matrix, dtype=float)
    except (TypeError, ValueError):
        cosines = np.zeros(0)
    size = len(TRANSLATION)
    require(cosines.shape == (size, size), f"`matrix` has shape {cosines.shape}: it should hold the cosine of every "
                                           "sentence with every sentence, 6×6 (vectors @ vectors.T)")
    require(np.allclose(np.diag(cosines), 1, atol=0.01) and np.allclose(cosines, cosines.T, atol=0.01)
            and np.abs(cosines).max() <= 1.01,
            "`matrix` is not a matrix of cosines of the sentences with themselves: embed the six sentences once "
            "and multiply the unit vectors, vectors @ vectors.T (1 on the diagonal, symmetric)")
    off_diagonal = cosines[~np.eye(size, dtype=bool)]
    require(np.ptp(off_diagonal) > 0, "every pair of different sentences has the same cosine in `matrix`: embed "
                                      "the sentences and multiply their vectors")
    return cosines


def translation_margins(cosines: np.ndarray) -> np.ndarray:
    """For each sentence: the cosine with its translation minus its best cosine with any other sentence."""
    margins = []
    for i, twin in enumerate(TRANSLATION):
        others = [cosines[i, j] for j in range(len(TRANSLATION)) if j not in (i, twin)]
        margins.append(cosines[i, twin] - max(others))
    return np.array(margins)


@exercise("0.3", names=("own_config", "from_file", "overridden"),
          expects="the path of your ragkit.toml, the settings loaded from it with environ={}, and the settings "
                  "loaded from it with RAGKIT_EMBEDDER=e5 in environ")
def config_file(own_config, from_file, overridden):
    """A file outside the project that selects MiniLM and one thread, and an environment variable that wins."""
    from_own = settings_in(own_config)
    require(isinstance(from_file, Settings), f"`from_file` is a {type(from_file).__name__}: store what "
                                             "load_settings(environ={}, config_file=own_config) returned")
    require(from_file == from_own, "`from_file` is not what your file gives on its own: load it with "
                                   "load_settings(environ={}, config_file=own_config), so that no variable of "
                                   "your shell takes part")
    require(isinstance(overridden, Settings), f"`overridden` is a {type(overridden).__name__}: store what "
                                              "load_settings(...) returned")
    require(overridden.embedder == "e5", f"`overridden` selects the embedder {overridden.embedder!r}: pass "
                                         'environ={"RAGKIT_EMBEDDER": "e5"}, which should win over the file')
    require(overridden.threads == 1, f"`overridden` has {overridden.threads} threads, not your file's one: load "
                                     "the same file, so that only the embedder changes")


def settings_in(own_config) -> Settings:
    """The settings the learner's file gives on its own, once it is checked to be a file of their own."""
    require(isinstance(own_config, (str, Path)), f"`own_config` is a {type(own_config).__name__}: store the path "
                                                 "of the file you wrote")
    path = Path(own_config).expanduser()
    require(path.is_file(), "`own_config` names no file: write it (own_config.write_text(...)) in a folder that "
                            "still exists when this check runs")
    require(path.resolve() != CONFIG_FILE.resolve(), "`own_config` is the project's own ragkit.toml, which every "
                                                     "lesson reads: write yours in a temporary folder "
                                                     "(tempfile.mkdtemp())")
    try:
        settings = load_settings(environ={}, config_file=path)
    except RagkitError as error:
        raise ExerciseFailed(f"load_settings cannot read `own_config`: {error}") from None
    require(settings.embedder == "minilm", f"your file selects the embedder {settings.embedder!r}: write "
                                           'embedder = "minilm" in it')
    require(settings.threads == 1, f"your file sets {settings.threads} threads: write threads = 1 in it")
    return settings
