"""Secrets never reach the store: by key and by pattern, everywhere text is stored (issue 13.10)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings

from em_plugin.capture.redaction import (
    REDACTED,
    Redactor,
    is_secret_key,
    redact_args,
    redact_text,
    redact_workflow,
)
from em_plugin.errors import ConfigurationError
from em_plugin.memory import EpisodicMemory
from em_plugin.suggest.types import Evidence, Suggestion
from provenance.export import export
from provenance.model import CallStep, FailedCall, InstructionStep, Workflow
from provenance.workflow_json import dumps_workflow
from tests.strategies import workflows

# Fake credentials in the real formats. Each marker is a substring that must never be stored.
_PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7pemPEMsecretBODYline1\n"
    "Qk9HVVNLRVlEQVRBpemPEMline2==\n-----END RSA PRIVATE KEY-----"
)
_JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6Ikpv"
    "aG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
_SK = "sk-proj-Zq8Xb2Lm4Np6Rt0Vw3Yc5Ed7Gh9Jk1Mn"
_ANT = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx"
_AKIA = "AKIAIOSFODNN7EXAMPLE"
_AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
_GHP = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
_GHO = "gho_16C7e42F292c6912E7710c838347Ae178B4b"
_GHS = "ghs_16C7e42F292c6912E7710c838347Ae178B4c"
_GLPAT = "glpat-xY9zW8vU7tS6rQ5pO4nM"
_XOXB = "xoxb-2123456789-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
_SLACK_HOOK = "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
_AIZA = "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
_STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
_HF = "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
_NPM = "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
_BEARER = "Zm9vYmFyYmF6cXV4c2VjcmV0dG9rZW4xMjM"

#: Secret -> where it is planted. Values are the distinctive parts that must disappear.
PLANTED: dict[str, str] = {
    "pwd-key-hunter": "key pwd",
    "ssh-key-body-AAAAB3Nza": "key ssh_key",
    "openai-plural-key-value": "key api_keys.openai",
    "listed-password-one": "list under a secret key",
    "listed-password-two": "list under a secret key",
    _SK: "sk- key in an instruction",
    _ANT: "Anthropic key in an output",
    _AKIA: "aws_access_key_id=AKIA in a config string",
    _AWS_SECRET: "aws_secret_access_key= in a config string",
    _GHP: "GitHub token in a git URL",
    _GHO: "gho_ token in an error message",
    _GHS: "x-access-token in a URL",
    _GLPAT: "GitLab token in an oauth2 URL",
    "MIIEpAIBAAKCAQEA7pemPEMsecretBODYline1": "PEM block in a config string",
    "Qk9HVVNLRVlEQVRBpemPEMline2": "PEM block in a config string",
    _BEARER: "Authorization: Bearer in a curl line",
    "pg-Pa55w0rd-secret": "password in a postgresql:// URL",
    "mongo-Pa55-secret": "password in a mongodb+srv:// URL",
    "redisSecretPw9": "password-only redis:// URL",
    _XOXB: "Slack token in extra",
    _SLACK_HOOK: "Slack webhook in a title",
    _JWT: "JWT in a failed call's args",
    _AIZA: "Google API key in a revised instruction",
    _STRIPE: "Stripe key in a step's extra",
    _HF: "Hugging Face token in an output object",
    _NPM: "npm token in .npmrc text",
    "dbPassw0rdAssign": "password= in a connection string",
    "flag-pass-value": "--password flag",
    "basic-dXNlcjpwYXNz": "Basic authorization header",
    "cookie-session-9f8e7d": "Cookie header",
    "AccountKeyAzureSecret==": "Azure AccountKey=",
    "json-client-secret-xyz": "client_secret inside JSON text",
    "env-export-openai-key": "export OPENAI_API_KEY=",
    "custom-ACME-123456": "a user pattern",
}


def _planted_workflow() -> Workflow:
    config = (
        f"[default]\naws_access_key_id={_AKIA}\naws_secret_access_key = {_AWS_SECRET}\n"
        f"key_file: |\n  {_PEM}\n"
    )
    curl = f'curl -H "Authorization: Bearer {_BEARER}" https://api.example.com/v1/items'
    nested = CallStep(
        "deploy",
        {
            "repo": f"https://{_GHP}@github.com/acme/app.git",
            "mirror": f"https://x-access-token:{_GHS}@github.com/acme/app.git",
            "lab": f"https://oauth2:{_GLPAT}@gitlab.com/acme/app.git",
            "config": config,
            "dsn": "postgresql://app:pg-Pa55w0rd-secret@db.internal:5432/app",
            "mongo": "mongodb+srv://admin:mongo-Pa55-secret@cluster0.example.net/test",
            "cache": "redis://:redisSecretPw9@cache:6379/0",
            "conn": "Server=db;Database=app;User Id=app;Password=dbPassw0rdAssign;",
            "cmd": "mysql --user app --password flag-pass-value -h db",
            "npmrc": f"//registry.npmjs.org/:_authToken={_NPM}",
            "azure": "Protocol=https;AccountName=x;AccountKey=AccountKeyAzureSecret==;",
            "shell": "export OPENAI_API_KEY=env-export-openai-key && run",
            "ticket": "ref custom-ACME-123456",
        },
        output={"token_info": {"hf": _HF}, "note": f"rotated {_ANT}"},
        agent="ops",
        extra={"x-meta": f"stripe {_STRIPE}"},
    )
    call = CallStep(
        "http_request",
        {
            "pwd": "pwd-key-hunter",
            "ssh_key": "ssh-key-body-AAAAB3Nza",
            "api_keys": {"openai": "openai-plural-key-value"},
            "passwords": ["listed-password-one", "listed-password-two"],
            "curl": curl,
            "headers": "Authorization: Basic basic-dXNlcjpwYXNz\nCookie: cookie-session-9f8e7d",
            "body": '{"client_id": "abc", "client_secret": "json-client-secret-xyz"}',
            "max_tokens": 512,
        },
        output="ok",
        agent="ops",
        steps=(nested,),
    )
    return Workflow(
        id="secrets/1",
        title=f"Notify https://hooks.slack.com/services/{_SLACK_HOOK}",
        steps=(InstructionStep(f"Use the key {_SK} to list the items", (call,)),),
        failed=(
            FailedCall(
                CallStep("login", {"jwt_blob": f"id={_JWT}"}),
                f"401: bad credentials {_GHO}",
            ),
        ),
        revised=(InstructionStep(f"call maps with {_AIZA}", id="r0"),),
        extra={"slack": _XOXB},
    )


def _exports(memory: EpisodicMemory) -> dict[str, str]:
    stored = memory.load("secrets/1")
    backend = memory.store.backend
    return {
        "json": dumps_workflow(stored),
        "ttl": export(stored, "ttl"),
        "provjson": export(stored, "provjson"),
        # Every triple of every graph in the store, whatever graph the mapping put it in.
        "store": "\n".join(
            " ".join(map(str, triple))
            for _, triples in backend.read_graphs(backend.graph_names())
            for triple in triples
        ),
    }


def test_every_planted_secret_is_gone_from_every_export() -> None:
    assert len(PLANTED) >= 27
    memory = EpisodicMemory(store="memory:", embedder="fake", redact_patterns=[r"ACME-\d{6}"])
    try:
        saved = memory.save(_planted_workflow())
        texts = _exports(memory)
    finally:
        memory.close()
    for name, text in texts.items():
        leaked = [f"{where}: {secret}" for secret, where in PLANTED.items() if secret in text]
        assert not leaked, f"{name} export leaks: {leaked}"
        assert REDACTED in text
    # What is not secret stays readable.
    call = saved.steps[0].steps[0]
    assert call.args["max_tokens"] == 512
    assert "https://api.example.com/v1/items" in call.args["curl"]
    assert call.steps[0].args["dsn"] == f"postgresql://app:{REDACTED}@db.internal:5432/app"
    assert saved.steps[0].text == f"Use the key {REDACTED} to list the items"
    assert saved.failed[0].error == f"401: bad credentials {REDACTED}"
    assert call.steps[0].args["ticket"] == f"ref custom-{REDACTED}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"Use the key {_SK} please", f"Use the key {REDACTED} please"),
        (f"aws_access_key_id={_AKIA}", f"aws_access_key_id={REDACTED}"),
        (
            "git clone https://user:tok3n-Value@github.com/a/b",
            f"git clone https://user:{REDACTED}@github.com/a/b",
        ),
        (f"-H 'Authorization: Bearer {_BEARER}'", f"-H 'Authorization: {REDACTED}'"),
        (f"session {_JWT} expired", f"session {REDACTED} expired"),
        ("password: hunter2", f"password: {REDACTED}"),
        ('{"api_key": "abc123"}', f'{{"api_key": "{REDACTED}"}}'),
        ("--pwd s3cr3t", f"--pwd {REDACTED}"),
    ],
)
def test_patterns_replace_only_the_credential(text: str, expected: str) -> None:
    assert redact_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=512 temperature: 0.2",
        "see https://github.com/acme/app and mailto:a@b.c",
        "git@github.com:acme/app.git",
        "the token limit is 4096 and the key point is clarity",
        "sk-short",
        "ssh-rsa AAAAB3NzaC1yc2E public key",
        "author: Ada, keyboard: qwerty",
        "classify the SDS of PFOA (CAS 335-67-1)",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact_text(text) == text


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("pwd", True),
        ("ssh_key", True),
        ("sshKey", True),
        ("api_keys", True),
        ("api_keys.openai", True),
        ("passwords", True),
        ("AccountKey", True),
        ("max_tokens", False),
        ("keyboard", False),
        ("monkey", False),
    ],
)
def test_extended_secret_keys(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


def test_lists_under_secret_keys_lose_their_values_but_keep_records() -> None:
    assert redact_args(
        {
            "api_keys": ["a-1", "b-2"],
            "secrets": [None, {"name": "db", "value": "v"}],
            "password": None,
            "keys": ["k"],
        }
    ) == {
        "api_keys": [REDACTED, REDACTED],
        "secrets": [None, {"name": "db", "value": "v"}],
        "password": None,
        "keys": ["k"],
    }


def test_user_patterns_are_checked_at_construction() -> None:
    with pytest.raises(ConfigurationError, match="not a valid regular expression"):
        Redactor(["(unclosed"])
    with pytest.raises(ConfigurationError, match="matches the empty string"):
        Redactor([r"x*"])
    with pytest.raises(ConfigurationError, match="must be a string or a compiled regex"):
        Redactor([42])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="not a valid regular expression"):
        EpisodicMemory(store="memory:", embedder="fake", redact_patterns=["(unclosed"])
    redactor = Redactor([re.compile(r"employee (?P<secret>\d{5})")])
    assert redactor.text("employee 12345 joined") == f"employee {REDACTED} joined"


def test_scoped_views_keep_the_user_patterns() -> None:
    memory = EpisodicMemory(store="memory:", embedder="fake", redact_patterns=[r"ACME-\d{6}"])
    try:
        view = memory.with_scope("other")
        saved = view.save(Workflow(id="w", steps=(InstructionStep("fix ACME-123456"),)))
    finally:
        memory.close()
    assert saved.steps[0].text == f"fix {REDACTED}"


@given(workflows)
@settings(max_examples=100, deadline=None)
def test_redaction_keeps_workflows_valid_and_is_idempotent(workflow: Workflow) -> None:
    once = redact_workflow(workflow)
    assert redact_workflow(once) == once
    assert json.loads(dumps_workflow(once))["id"] == workflow.id


def test_suggestion_records_are_redacted_but_keep_their_evidence() -> None:
    # A suggestion can quote the live conversation (bound args, LLM text), never redacted by a save.
    memory = EpisodicMemory(store="memory:", embedder="fake")
    try:
        memory.save(Workflow(id="past", steps=(CallStep("login"),)))
        shown = Suggestion(
            text=f"Call login with {_SK}",
            tool="login",
            args={"password": "live-pass-123", "user": "ada"},
            evidence=(Evidence("past", 0, 0.9),),
            detail=(f"token {_GHP}",),
        )
        assert memory.record_suggestions("s-1", [shown]) is not None
        backend = memory.store.backend
        stored = "\n".join(
            " ".join(map(str, triple))
            for _, triples in backend.read_graphs(backend.graph_names())
            for triple in triples
        )
    finally:
        memory.close()
    for secret in (_SK, "live-pass-123", _GHP):
        assert secret not in stored
    assert "ada" in stored and "workflow/past" in stored
