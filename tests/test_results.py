"""Tool results and tool declarations, per wire, from each descriptor's templates.

Each history is built from a golden stream: the assembled message, and a record per extracted
call (a success with an object result, a failure with an error), and compared in full with the
shape the provider's documentation gives (URLs in the descriptors' comments).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import engine
from engine.compile.results import (
    compile_sections,
    leak_result_messages,
    result_messages,
    text_result_messages,
    tool_declarations,
)
from engine.compile.templates import MISSING, compile_template
from engine.language.yamlsource import load
from engine.records import Tool, ToolCallRecord

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
FORMATS = ROOT / "formats"

OK = {"temp": 21, "unit": "C"}
OK_TEXT = '{"temp": 21, "unit": "C"}'


def _descriptor(name: str) -> dict:
    path = FORMATS / f"{name}.yaml"
    if not path.exists():
        return {}
    data, _ = load(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def _with_sections() -> list[str]:
    return sorted(
        p.stem
        for p in FORMATS.glob("*.yaml")
        if {"results", "declarations"} & set(_descriptor(p.stem))
    )


def wire(name: str):
    """The built-in strategy, skipped when its descriptor does not declare both sections."""
    data = _descriptor(name)
    if "results" not in data or "declarations" not in data:
        pytest.skip(f"{name} declares no results/declarations")
    return engine.load_format(name)


def assemble(name: str, scenario: str) -> tuple[object, dict, list]:
    fmt = wire(name)
    buf = engine.LLMStreamBuffer(strategies=[fmt])
    for line in (GOLDEN / name / f"{scenario}.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            buf.add(line)
    buf.close()
    assert buf.is_finished()
    return fmt, buf.as_dict(), buf.calls()


def ok(call, result=OK) -> ToolCallRecord:
    return ToolCallRecord(call.name, call.arguments, result=result, tool_call_id=call.id)


def fail(call) -> ToolCallRecord:
    return ToolCallRecord(
        call.name, call.arguments, error=f"Tool '{call.name}' failed: boom", tool_call_id=call.id
    )


def err(call) -> str:
    return f"Tool '{call.name}' failed: boom"


# -- every descriptor's sections compile --------------------------------------------------------


@pytest.mark.parametrize("name", _with_sections())
def test_sections_compile_and_never_use_the_system_role(name):
    data = _descriptor(name)
    sections = compile_sections(data)
    assert sections.results is not None and sections.declarations is not None
    assert sections.results.leak_role != "system"
    assert engine.validate_descriptor(FORMATS / f"{name}.yaml") == []


# -- OpenAI Chat ---------------------------------------------------------------------------------


def test_openai_chat_parallel_one_tool_message_per_call():
    fmt, message, calls = assemble("openai_chat", "oai_py_parallel_tools_a")
    before = copy.deepcopy(message)
    history = result_messages(fmt, message, [ok(calls[0]), fail(calls[1])])
    assert history == [
        message,
        {"role": "tool", "tool_call_id": calls[0].id, "content": OK_TEXT},
        {"role": "tool", "tool_call_id": calls[1].id, "content": err(calls[1])},
    ]
    assert history[0] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "function": {
                    "arguments": '{"city": "Edinburgh", "country": "GB", "units": "c"}',
                    "name": "GetWeatherArgs",
                },
                "id": "call_JMW1whyEaYG438VE1OIflxA2",
                "type": "function",
            },
            {
                "function": {
                    "arguments": '{"ticker": "AAPL", "exchange": "NASDAQ"}',
                    "name": "get_stock_price",
                },
                "id": "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                "type": "function",
            },
        ],
    }
    # the history shares nothing with the message
    history[0]["tool_calls"][0]["id"] = "changed"
    assert message == before


def test_openai_chat_call_without_result_is_not_echoed():
    fmt, message, calls = assemble("openai_chat", "oai_py_parallel_tools_a")
    history = result_messages(fmt, message, [ok(calls[1])])
    assert history[0]["tool_calls"] == [message["tool_calls"][1]]
    assert history[1:] == [{"role": "tool", "tool_call_id": calls[1].id, "content": OK_TEXT}]


def test_openai_compatible_deepseek_keeps_reasoning_content():
    fmt, message, calls = assemble("openai_chat", "compat_deepseek_vercel_reasoning_tool_call")
    history = result_messages(fmt, message, [ok(calls[0])])
    assert history == [
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": message["reasoning_content"],
            "tool_calls": [
                {
                    "function": {
                        "arguments": '{"location": "San Francisco"}',
                        "name": "weather",
                    },
                    "id": "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF",
                    "type": "function",
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "content": OK_TEXT},
    ]
    assert history[0]["reasoning_content"].startswith("The user is asking for the weather")


@pytest.mark.parametrize(
    ("result", "content"),
    [
        ("sunny, 21C", "sunny, 21C"),
        ([1, 2], "[1, 2]"),
        (None, "null"),
        (7, "7"),
        ({"é": "ü"}, '{"é": "ü"}'),
    ],
)
def test_openai_chat_result_text_rules(result, content):
    fmt, message, calls = assemble("openai_chat", "compat_deepseek_vercel_reasoning_tool_call")
    history = result_messages(fmt, message, [ok(calls[0], result)])
    assert history[1]["content"] == content


# -- OpenAI Responses ----------------------------------------------------------------------------


def test_responses_function_call_echo_and_output():
    fmt, message, calls = assemble("openai_responses", "pydantic_ai_tool_call")
    echo = {
        "type": "function_call",
        "id": "fc_67e554a1de488191af0831d35cbe082e0794405d35281ae2",
        "call_id": "call_kL0PCQV7M2WMoVX8V8OtYSAL",
        "name": "get_capital",
        "arguments": '{"country":"France"}',
        "status": "completed",
    }
    assert result_messages(fmt, message, [ok(calls[0])]) == [
        echo,
        {
            "type": "function_call_output",
            "call_id": "call_kL0PCQV7M2WMoVX8V8OtYSAL",
            "output": OK_TEXT,
        },
    ]
    assert result_messages(fmt, message, [fail(calls[0])]) == [
        echo,
        {
            "type": "function_call_output",
            "call_id": "call_kL0PCQV7M2WMoVX8V8OtYSAL",
            "output": err(calls[0]),
        },
    ]


def test_responses_reasoning_items_are_echoed_before_the_call():
    fmt, message, calls = assemble("openai_responses", "hand_reasoning_summary_call")
    history = result_messages(fmt, message, [ok(calls[0], "4C, windy")])
    assert history == [
        message["output"][0],
        message["output"][1],
        {"type": "function_call_output", "call_id": calls[0].id, "output": "4C, windy"},
    ]
    assert history[0]["type"] == "reasoning" and history[0]["summary"]
    assert history[1]["type"] == "function_call" and history[1]["call_id"] == calls[0].id


def test_responses_encrypted_reasoning_kept():
    fmt, message, calls = assemble("openai_responses", "vercel_reasoning_tool_chain.part1")
    history = result_messages(fmt, message, [ok(calls[0], 19)])
    assert history[0]["type"] == "reasoning"
    assert history[0]["encrypted_content"] == message["output"][0]["encrypted_content"]
    assert history[-1] == {"type": "function_call_output", "call_id": calls[0].id, "output": "19"}


# -- Anthropic Messages --------------------------------------------------------------------------


def test_anthropic_thinking_blocks_and_signature_carried_back():
    fmt, message, calls = assemble("anthropic_messages", "llm_anthropic_thinking_tool_use")
    thinking = message["content"][0]
    assert thinking["type"] == "thinking" and thinking["signature"].startswith("EoQDCm0I")
    history = result_messages(fmt, message, [ok(calls[0], "0.9.3")])
    assert history == [
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": thinking["thinking"],
                    "signature": thinking["signature"],
                },
                {
                    "type": "tool_use",
                    "id": "toolu_01825dXWLSoJwCst1qTsiWdb",
                    "name": "fixed_version",
                    "input": {},
                    "caller": {"type": "direct"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01825dXWLSoJwCst1qTsiWdb",
                    "content": "0.9.3",
                },
            ],
        },
    ]


def test_anthropic_parallel_results_in_one_user_message_with_is_error():
    fmt, message, calls = assemble("anthropic_messages", "hand_parallel_tool_use")
    history = result_messages(fmt, message, [ok(calls[0]), fail(calls[1])])
    assert history == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I'll check the weather in both cities."},
                {
                    "type": "tool_use",
                    "id": "toolu_01l0pyMgMJxsFaHSlL4rkfkz",
                    "name": "get_weather",
                    "input": {"city": "Lyon"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_01AaMm6M1vHasGdJqwQx5BIE",
                    "name": "get_weather",
                    "input": {"city": "Marseille"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01l0pyMgMJxsFaHSlL4rkfkz",
                    "content": OK_TEXT,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01AaMm6M1vHasGdJqwQx5BIE",
                    "content": err(calls[1]),
                    "is_error": True,
                },
            ],
        },
    ]


def test_anthropic_redacted_thinking_kept_and_empty_text_dropped():
    fmt = wire("anthropic_messages")
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy"},
            {"type": "text", "text": ""},
            {"type": "tool_use", "id": "toolu_1", "name": "a", "input": {"x": 1}},
        ],
        "stop_reason": "tool_use",
        "usage": {"output_tokens": 3},
    }
    record = ToolCallRecord("a", {"x": 1}, result=[1, 2], tool_call_id="toolu_1")
    assert result_messages(fmt, message, [record]) == [
        {
            "role": "assistant",
            "content": [
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy"},
                {"type": "tool_use", "id": "toolu_1", "name": "a", "input": {"x": 1}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "[1, 2]"},
            ],
        },
    ]


# -- Bedrock Converse ----------------------------------------------------------------------------


def test_bedrock_tool_results_in_one_user_message_with_status_error():
    fmt, message, calls = assemble("bedrock_converse", "hand_parallel_tool_use_boto3")
    history = result_messages(fmt, message, [ok(calls[0]), fail(calls[1])])
    assert history == [
        {
            "role": "assistant",
            "content": [
                {"text": "I'll get the weather for both cities."},
                {
                    "toolUse": {
                        "toolUseId": "tooluse_xWYZJ7aA4qwEXmVK_bwIvk",
                        "name": "get_weather",
                        "input": {"city": "Seattle"},
                    }
                },
                {
                    "toolUse": {
                        "toolUseId": "tooluse_uY1byQaKgHTU38guyoeT7f",
                        "name": "get_weather",
                        "input": {"city": "Portland"},
                    }
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "tooluse_xWYZJ7aA4qwEXmVK_bwIvk",
                        "content": [{"json": OK}],
                    }
                },
                {
                    "toolResult": {
                        "toolUseId": "tooluse_uY1byQaKgHTU38guyoeT7f",
                        "content": [{"text": err(calls[1])}],
                        "status": "error",
                    }
                },
            ],
        },
    ]


@pytest.mark.parametrize(
    ("result", "content"),
    [
        ("sunny", [{"text": "sunny"}]),
        ([1, 2], [{"json": {"result": [1, 2]}}]),
        (3.5, [{"json": {"result": 3.5}}]),
        (None, [{"json": {"result": None}}]),
    ],
)
def test_bedrock_non_object_results_wrapped(result, content):
    fmt, message, calls = assemble("bedrock_converse", "hand_parallel_tool_use_boto3")
    history = result_messages(fmt, message, [ok(calls[0], result), ok(calls[1])])
    assert history[1]["content"][0]["toolResult"]["content"] == content


def test_bedrock_reasoning_content_kept_and_blank_text_dropped():
    fmt = wire("bedrock_converse")
    reasoning = {"reasoningContent": {"reasoningText": {"text": "Think.", "signature": "c2ln"}}}
    message = {
        "role": "assistant",
        "content": [
            reasoning,
            {"text": ""},
            {"toolUse": {"toolUseId": "tooluse_a", "name": "a", "input": {}}},
        ],
    }
    history = result_messages(fmt, message, [ToolCallRecord("a", {}, {"k": 1}, None, "tooluse_a")])
    assert history[0] == {
        "role": "assistant",
        "content": [reasoning, {"toolUse": {"toolUseId": "tooluse_a", "name": "a", "input": {}}}],
    }


# -- Gemini --------------------------------------------------------------------------------------


def test_gemini_function_responses_keep_thought_signature_and_ids():
    fmt, message, calls = assemble("gemini", "hand_parallel_calls_ids")
    signature = message["parts"][0]["thoughtSignature"]
    history = result_messages(fmt, message, [ok(calls[0]), fail(calls[1])])
    assert history == [
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {
                        "name": "get_weather",
                        "args": {"city": "Tokyo"},
                        "id": "sfj91lax",
                    },
                    "thoughtSignature": signature,
                },
                {
                    "functionCall": {
                        "name": "get_weather",
                        "args": {"city": "Osaka"},
                        "id": "x5iuhi7b",
                    }
                },
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"id": "sfj91lax", "name": "get_weather", "response": OK}},
                {
                    "functionResponse": {
                        "id": "x5iuhi7b",
                        "name": "get_weather",
                        "response": {"error": err(calls[1])},
                    }
                },
            ],
        },
    ]


def test_gemini3_call_without_id_and_non_object_result_wrapped():
    fmt, message, calls = assemble("gemini", "llm_gemini3_function_call_jsonarray")
    assert calls[0].id is None
    signature = message["parts"][0]["thoughtSignature"]
    history = result_messages(fmt, message, [ok(calls[0], 15)])
    assert history == [
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"name": "multiply", "args": {"y": 3, "x": 5}},
                    "thoughtSignature": signature,
                },
            ],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "multiply", "response": {"result": 15}}}],
        },
    ]


def test_gemini_text_before_call_kept():
    fmt, message, calls = assemble("gemini", "hand_text_then_call_finish")
    history = result_messages(fmt, message, [ok(calls[0], "231.50 EUR")])
    assert history[0] == message
    assert history[0]["parts"][0] == {"text": "Let me convert that for you."}
    assert "thoughtSignature" in history[0]["parts"][1]
    assert history[1] == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "id": "2vumvw5l",
                    "name": "convert_currency",
                    "response": {"result": "231.50 EUR"},
                }
            }
        ],
    }


# -- Cohere v2 -----------------------------------------------------------------------------------


def test_cohere_tool_plan_and_tool_messages():
    fmt, message, calls = assemble("cohere_v2", "hand_tool_plan_two_calls")
    history = result_messages(fmt, message, [ok(calls[0]), fail(calls[1])])
    assert history == [
        {
            "role": "assistant",
            "tool_plan": "I will search for the weather in Madrid and Brasilia.",
            "tool_calls": [
                {
                    "id": "get_weather_lyzzr3an2ilp",
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "arguments": '{\n    "location": "Madrid"\n}',
                    },
                },
                {
                    "id": "get_weather_yg9xs5a7lrkf",
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "arguments": '{\n    "location": "Brasilia"\n}',
                    },
                },
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "get_weather_lyzzr3an2ilp",
            "content": [{"type": "document", "document": {"data": OK_TEXT}}],
        },
        {
            "role": "tool",
            "tool_call_id": "get_weather_yg9xs5a7lrkf",
            "content": [
                {"type": "document", "document": {"data": json.dumps({"error": err(calls[1])})}}
            ],
        },
    ]


def test_cohere_string_result_wrapped_in_document():
    fmt, message, calls = assemble("cohere_v2", "hand_tool_plan_two_calls")
    history = result_messages(fmt, message, [ok(calls[0], "20C")])
    assert [c["id"] for c in history[0]["tool_calls"]] == [calls[0].id]
    assert history[1]["content"] == [
        {"type": "document", "document": {"data": '{"result": "20C"}'}}
    ]


# -- Ollama --------------------------------------------------------------------------------------


def test_ollama_tool_messages_keep_thinking():
    fmt, message, calls = assemble("ollama", "hand_thinking_two_calls")
    history = result_messages(fmt, message, [ok(calls[0], "11C"), fail(calls[1])])
    assert history == [
        {
            "role": "assistant",
            "content": "",
            "thinking": "Okay, the user wants the temperature and the conditions in London. "
            "I'll call both tools.",
            "tool_calls": [
                {
                    "id": "call_2ilpyg9x",
                    "function": {
                        "index": 0,
                        "name": "get_temperature",
                        "arguments": {"city": "London"},
                    },
                },
                {
                    "id": "call_s5a7lrkf",
                    "function": {
                        "index": 1,
                        "name": "get_conditions",
                        "arguments": {"city": "London"},
                    },
                },
            ],
        },
        {
            "role": "tool",
            "tool_name": "get_temperature",
            "tool_call_id": "call_2ilpyg9x",
            "content": "11C",
        },
        {
            "role": "tool",
            "tool_name": "get_conditions",
            "tool_call_id": "call_s5a7lrkf",
            "content": err(calls[1]),
        },
    ]


def test_ollama_call_without_id_matched_by_name():
    fmt = wire("ollama")
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"function": {"name": "a", "arguments": {}}},
            {"function": {"name": "b", "arguments": {}}},
        ],
    }
    history = result_messages(fmt, message, [ToolCallRecord("b", {}, result="x")])
    assert history == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "b", "arguments": {}}}],
        },
        {"role": "tool", "tool_name": "b", "content": "x"},
    ]


# -- declarations --------------------------------------------------------------------------------

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "units": {"enum": ["c", "f"]}},
    "required": ["city"],
    "additionalProperties": False,
}
TOOLS = [Tool("get_weather", "Current weather for a city", WEATHER_SCHEMA), Tool("ping")]
EMPTY = {"type": "object", "properties": {}}

_FUNCTION_STYLE = {
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city",
                "parameters": WEATHER_SCHEMA,
            },
        },
        {"type": "function", "function": {"name": "ping", "parameters": EMPTY}},
    ]
}

DECLARATIONS = {
    "openai_chat": _FUNCTION_STYLE,
    "openai_responses": {
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Current weather for a city",
                "parameters": WEATHER_SCHEMA,
                "strict": False,
            },
            {"type": "function", "name": "ping", "parameters": EMPTY, "strict": False},
        ]
    },
    "anthropic_messages": {
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather for a city",
                "input_schema": WEATHER_SCHEMA,
            },
            {"name": "ping", "input_schema": EMPTY},
        ]
    },
    "bedrock_converse": {
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "get_weather",
                        "description": "Current weather for a city",
                        "inputSchema": {"json": WEATHER_SCHEMA},
                    }
                },
                {"toolSpec": {"name": "ping", "inputSchema": {"json": EMPTY}}},
            ]
        }
    },
    "gemini": {
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "Current weather for a city",
                        "parametersJsonSchema": WEATHER_SCHEMA,
                    },
                    {"name": "ping", "parametersJsonSchema": EMPTY},
                ]
            }
        ]
    },
    "cohere_v2": _FUNCTION_STYLE,
    "ollama": _FUNCTION_STYLE,
}


@pytest.mark.parametrize("name", sorted(DECLARATIONS))
def test_declarations_exact_shape(name):
    fmt = wire(name)
    fragment = tool_declarations(fmt, TOOLS)
    assert fragment == DECLARATIONS[name]
    # one tool set serves every wire, and the fragment shares nothing with it
    assert TOOLS[0].parameters == WEATHER_SCHEMA
    json.dumps(fragment)
    assert tool_declarations(fmt, []) == {}
    as_dicts = [
        {"name": t.name, "description": t.description, "parameters": t.parameters} for t in TOOLS
    ]
    assert tool_declarations(fmt, as_dicts) == DECLARATIONS[name]


# -- calls leaked into text ----------------------------------------------------------------------

RECORDS = [
    ToolCallRecord("get_weather", {"city": "Oslo"}, result=OK),
    ToolCallRecord("ping", {}, error="timeout"),
]
RESULTS_TEXT = f"Tool 'get_weather' returned: {OK_TEXT}\n\nTool 'ping' failed: timeout"


def test_text_result_messages_generic_shape():
    assert text_result_messages("call", RECORDS, "user") == [
        {"role": "assistant", "content": "call"},
        {"role": "user", "content": RESULTS_TEXT},
    ]
    with pytest.raises(ValueError):
        text_result_messages("call", RECORDS, "system")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "openai_chat",
            [{"role": "assistant", "content": "call"}, {"role": "user", "content": RESULTS_TEXT}],
        ),
        (
            "openai_responses",
            [{"role": "assistant", "content": "call"}, {"role": "user", "content": RESULTS_TEXT}],
        ),
        (
            "anthropic_messages",
            [{"role": "assistant", "content": "call"}, {"role": "user", "content": RESULTS_TEXT}],
        ),
        (
            "bedrock_converse",
            [
                {"role": "assistant", "content": [{"text": "call"}]},
                {"role": "user", "content": [{"text": RESULTS_TEXT}]},
            ],
        ),
        (
            "gemini",
            [
                {"role": "model", "parts": [{"text": "call"}]},
                {"role": "user", "parts": [{"text": RESULTS_TEXT}]},
            ],
        ),
        (
            "cohere_v2",
            [{"role": "assistant", "content": "call"}, {"role": "user", "content": RESULTS_TEXT}],
        ),
        (
            "ollama",
            [{"role": "assistant", "content": "call"}, {"role": "user", "content": RESULTS_TEXT}],
        ),
    ],
)
def test_leaked_call_results_per_wire(name, expected):
    fmt = wire(name)
    assert leak_result_messages(fmt, "call", RECORDS) == expected
    # a str message is a leaked call
    assert result_messages(fmt, "call", RECORDS) == expected


# -- the template language -----------------------------------------------------------------------


def render(spec, ctx):
    return compile_template(spec).render(ctx, MISSING)


def test_path_default_and_omission():
    ctx = {"a": {"b": [10, {"c": None}]}, "s": ""}
    assert render({"$path": "a.b[0]"}, ctx) == 10
    assert render({"$path": "a.b[1].c"}, ctx) is MISSING
    assert render({"$path": "a.x", "default": 5}, ctx) == 5
    assert render({"$path": "s"}, ctx) == ""
    assert render({"k": {"$path": "nope"}, "l": [{"$path": "nope"}, 1]}, ctx) == {"l": [1]}
    assert compile_template({"$path": "nope"}).render(ctx) is None


def test_path_with_sets_fields_on_a_copy_of_a_mapping():
    call = {"id": "c1", "function": {"name": "f"}}
    ctx = {"call": call, "n": 3, "text": "t"}
    typed = render({"$path": "call", "with": {"type": "function", "gone": {"$path": "nope"}}}, ctx)
    assert typed == {"id": "c1", "function": {"name": "f"}, "type": "function"}
    assert call == {"id": "c1", "function": {"name": "f"}}  # the context's own is not changed
    assert render({"$path": "call", "with": {"id": {"$path": "n"}}}, ctx)["id"] == 3
    assert render({"$path": "text", "with": {"a": 1}}, ctx) == "t"  # not a mapping: as it is
    assert render({"$path": "nope", "with": {"a": 1}, "default": 0}, ctx) == 0


def test_if_each_json():
    ctx = {"xs": [1, 2], "flag": True, "rec": {"failed": False, "error": None}}
    spec = {
        "$each": "xs",
        "as": "x",
        "$emit": {"v": {"$path": "x"}, "f": {"$if": "flag", "then": "yes"}},
    }
    assert render(spec, ctx) == [{"v": 1, "f": "yes"}, {"v": 2, "f": "yes"}]
    assert render({"$if": {"field": "rec.failed", "equals": True}, "then": 1, "else": 2}, ctx) == 2
    assert render({"$if": "rec.failed", "then": 1}, ctx) is MISSING
    assert render({"$json": {"a": [1, "é"]}}, ctx) == '{"a": [1, "é"]}'
    assert render({"$each": "missing", "$emit": 1}, ctx) == []


def test_result_modes():
    good = {"result": "txt", "error": None}
    bad = {"result": None, "error": "boom"}
    assert render({"$result": "r"}, {"r": good}) == "txt"
    assert render({"$result": "r", "as": "object"}, {"r": good}) == {"result": "txt"}
    assert render({"$result": "r", "as": "object"}, {"r": {"result": {"a": 1}}}) == {"a": 1}
    assert render({"$result": "r"}, {"r": bad}) == "boom"
    assert render({"$result": "r", "as": "object"}, {"r": bad}) == {"error": "boom"}
    assert render({"$result": None}, {"record": {"result": [1]}}) == "[1]"


def test_echo_keeps_only_answered_calls_in_order():
    spec = {
        "$echo": "m",
        "list": "items",
        "calls": {"where": {"has": "call"}, "id": "call.id", "name": "call.name"},
        "drop": {"field": "t", "equals": ""},
    }
    m = {
        "role": "x",
        "items": [
            {"t": "a"},
            {"t": ""},
            {"call": {"id": "1", "name": "f"}},
            {"call": {"id": "2", "name": "f"}},
            {"call": {"name": "g"}},
        ],
    }
    ctx = {
        "m": m,
        "records": [{"tool_call_id": "2", "name": "f"}, {"tool_call_id": None, "name": "g"}],
    }
    assert render(spec, ctx) == {
        "role": "x",
        "items": [{"t": "a"}, {"call": {"id": "2", "name": "f"}}, {"call": {"name": "g"}}],
    }
    assert render(spec, {"m": {"role": "x", "items": [{"call": {"id": "9"}}]}, "records": []}) == {
        "role": "x"
    }
    assert render({"$echo": "m.items"}, ctx) == m["items"]


@pytest.mark.parametrize(
    ("spec", "pointer"),
    [
        ({"a": [{"$pth": "x"}]}, "/a/0/$pth"),
        ({"$path": "a", "$json": 1}, ""),
        ({"$path": ""}, "/$path"),
        ({"$path": "a..b"}, "/$path"),
        ({"$path": "a", "else": 1}, "/else"),
        ({"k": {"$each": "xs"}}, "/k"),
        ({"$emit": 1}, ""),
        ({"$if": "x"}, ""),
        ({"$if": {"bogus": 1}, "then": 1}, "/$if"),
        ({"$result": "r", "as": "json"}, "/as"),
        ({"$echo": "m", "calls": {"id": "id"}}, "/calls"),
        ({"$each": "xs", "as": "no-name", "$emit": 1}, "/as"),
        ({"a/b": {"$x": 1}}, "/a~1b/$x"),
    ],
)
def test_compile_errors_name_the_pointer(spec, pointer):
    with pytest.raises(ValueError) as info:
        compile_template(spec, "/results/message")
    assert str(info.value).startswith(f"/results/message{pointer}: ")


def test_a_predicate_in_a_template_is_held_to_the_schema():
    """The predicate compiler lets a key beside a test by; the schema's predicate refuses it,
    at its pointer inside the template (the template compiler asks it)."""
    spec = {"$if": {"field": "x", "equals": 1, "bogus": 2}, "then": 1}
    with pytest.raises(ValueError) as info:
        compile_template(spec, "/results/message")
    said = [f"{pointer}: {message}" for pointer, message, _ in info.value.problems]
    assert any(line.startswith("/results/message/$if/bogus: unknown key 'bogus'") for line in said)


def test_results_section_errors():
    with pytest.raises(ValueError, match=r"^/results/leak_role: "):
        compile_sections({"results": {"result": {}, "leak_role": "system"}})
    with pytest.raises(ValueError, match=r"^/results: mode one_message needs message"):
        compile_sections({"results": {"mode": "one_message", "result": {}}})
    with pytest.raises(ValueError, match=r"^/results/bogus: "):
        compile_sections({"results": {"result": {}, "bogus": 1}})
    with pytest.raises(ValueError, match=r"^/declarations/tools/\$bad: "):
        compile_sections({"declarations": {"tools": {"$bad": 1}}})


def test_a_strategy_from_a_dict_names_every_bad_template():
    """ExtractionStrategy(dict) (no validator): each problem of compile_sections is the
    strategy's, at its own pointer, raised together as one DescriptorError."""
    descriptor = copy.deepcopy(engine.load_format("openai_chat").descriptor)
    descriptor["results"]["assistant"] = {"role": "assistant", "content": {"$pth": "text"}}
    descriptor["results"]["result"] = {"role": "tool", "content": {"$json": "record", "x": 1}}
    with pytest.raises(engine.DescriptorError) as caught:
        engine.ExtractionStrategy(descriptor)
    pointers = [p.pointer for p in caught.value.problems]
    assert pointers == ["/results/assistant/content/$pth", "/results/result/content/x"]
    assert "<descriptor>: /results/assistant/content/$pth: unknown construct $pth" in str(
        caught.value
    )


def test_any_object_with_a_descriptor_works_and_records_may_be_dicts():
    strategy = SimpleNamespace(
        name="toy",
        descriptor={
            "results": {
                "assistant": {"role": "assistant", "content": {"$path": "message.text"}},
                "result": {"id": {"$path": "record.tool_call_id"}, "out": {"$result": "record"}},
            },
            "declarations": {"names": {"$each": "tools", "as": "t", "$emit": {"$path": "t.name"}}},
        },
    )
    records = [{"name": "a", "arguments": {}, "result": {"x": 1}, "tool_call_id": "c1"}]
    assert result_messages(strategy, {"text": "hi"}, records) == [
        {"role": "assistant", "content": "hi"},
        {"id": "c1", "out": '{"x": 1}'},
    ]
    assert tool_declarations(strategy, [Tool("a"), {"name": "b"}]) == {"names": ["a", "b"]}


def test_the_schema_describes_the_leak_role_the_compiler_defaults_to() -> None:
    from engine.compile import results
    from engine.compile.schema import schema

    leak_role = schema()["$defs"]["results"]["properties"]["leak_role"]
    assert leak_role["default"] == results.DEFAULT_LEAK_ROLE
