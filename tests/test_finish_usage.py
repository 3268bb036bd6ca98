"""One finish reason and one usage on every wire (issue 19, points 1 and 2).

EXPECTED holds, for every golden stream of every built-in wire, the finish reason and the
token counts its provider's documentation gives for that stream, written from the stream's
own raw values (its last stop reason, its usage object) and the documented definitions,
never read back from the engine:

- openai_chat: finish_reason stop, length, tool_calls, function_call (tool_calls),
  content_filter; prompt_tokens (cached included), completion_tokens (reasoning included),
  total_tokens, completion_tokens_details.reasoning_tokens, prompt_tokens_details.cached_tokens
  (platform.openai.com/docs/api-reference/chat/object). xAI's completion_tokens leave the
  reasoning out (docs.x.ai/docs/guides/reasoning): its rows keep the wire's numbers.
- openai_responses: completed, incomplete_details.reason max_output_tokens (length) or
  content_filter, failed (error); input_tokens, output_tokens, total_tokens and their details.
- anthropic_messages: end_turn, stop_sequence, max_tokens, model_context_window_exceeded,
  tool_use, refusal; input = input_tokens + cache_read_input_tokens +
  cache_creation_input_tokens, output_tokens (thinking included; apart in
  output_tokens_details.thinking_tokens where a response gives it), no total (input +
  output), cached = cache reads.
- bedrock_converse: as Anthropic, plus guardrail_intervened/content_filtered (content_filter)
  and malformed_* (error); input = inputTokens + cacheRead/WriteInputTokens, totalTokens.
- gemini: STOP (1 as a protobuf number), MAX_TOKENS, the safety reasons, MALFORMED_FUNCTION_CALL;
  promptTokenCount, output = candidatesTokenCount + thoughtsTokenCount, totalTokenCount.
- cohere_v2: COMPLETE, STOP_SEQUENCE, MAX_TOKENS, TOOL_CALL, ERROR, TIMEOUT; usage.tokens
  (not billed_units), usage.cached_tokens, no total.
- ollama: done_reason stop, length; prompt_eval_count, eval_count, no total.

A normal stop whose turn holds runnable client calls is "tool_calls"; a stream ended by a
provider's error is "error"; one without its DONE has no finish reason. A row is
(finish_reason, (input, output, total, reasoning, cached)) or None for a stream without usage.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from conftest import GOLDEN, golden_streams, read_stream, stream_id

import engine

WIRES = [
    "openai_chat",
    "openai_responses",
    "anthropic_messages",
    "bedrock_converse",
    "gemini",
    "cohere_v2",
    "ollama",
]
STREAMS = golden_streams(WIRES)

EXPECTED = {
    "openai_chat/compat_alibaba_vercel_reasoning": (
        "stop",
        (24, 1355, 1379, 1084, 0),
    ),  # raw "stop"
    "openai_chat/compat_alibaba_vercel_tool_call": (
        "tool_calls",
        (295, 22, 317, None, 0),
    ),  # raw "tool_calls"
    "openai_chat/compat_anthropic_compat_vercel_tool_call_sanitized": (
        "tool_calls",
        None,
    ),  # raw "tool_calls"
    "openai_chat/compat_deepseek_pydantic_ai_thinking": (
        "stop",
        (6, 212, 218, 198, 0),
    ),  # raw "stop"
    "openai_chat/compat_deepseek_vercel_reasoning": ("stop", (18, 219, 237, 205, 0)),  # raw "stop"
    "openai_chat/compat_deepseek_vercel_reasoning_tool_call": (
        "tool_calls",
        (339, 83, 422, 39, 320),
    ),  # raw "tool_calls"
    "openai_chat/compat_groq_pydantic_ai_text_then_error": ("error", None),  # raw None
    "openai_chat/compat_groq_pydantic_ai_tool_call_retry": (
        "tool_calls",
        (304, 49, 353, 23, None),
    ),  # raw "tool_calls"
    "openai_chat/compat_groq_pydantic_ai_tool_use_failed_error": ("error", None),  # raw None
    "openai_chat/compat_groq_vercel_tool_call": (
        "tool_calls",
        (210, 15, 225, None, None),
    ),  # raw "tool_calls"
    "openai_chat/compat_mistral_pydantic_ai_thinking": (
        "stop",
        (10, 232, 242, None, None),
    ),  # raw "stop"
    "openai_chat/compat_mistral_vercel_reasoning": ("stop", (10, 46, 56, None, None)),  # raw "stop"
    "openai_chat/compat_mistral_vercel_text": ("stop", (13, 8, 21, None, None)),  # raw "stop"
    "openai_chat/compat_mistral_vercel_tool_call": (
        "tool_calls",
        (124, 22, 146, None, None),
    ),  # raw "tool_calls"
    "openai_chat/compat_openrouter_llm_kimi_k2_tool_call_a": (None, (57, 17, 74, 0, 0)),  # raw None
    "openai_chat/compat_openrouter_llm_kimi_k2_tool_call_c": (
        "tool_calls",
        (56, 12, 68, 0, 0),
    ),  # raw "tool_calls"
    "openai_chat/compat_openrouter_pydantic_ai_reasoning": (
        "stop",
        (9, 104, 113, 0, 0),
    ),  # raw "stop"
    "openai_chat/compat_perplexity_vercel_text": ("stop", (11, 434, 445, None, None)),  # raw "stop"
    "openai_chat/compat_together_pydantic_ai_hf_router_thinking": (
        "stop",
        (10, 955, 965, None, None),
    ),  # raw "stop"
    "openai_chat/compat_xai_vercel_compat_tool_call": (
        "tool_calls",
        (307, 26, 560, 227, 306),
    ),  # raw "tool_calls"
    "openai_chat/compat_xai_vercel_text": ("stop", (12, 1, 303, 290, 11)),  # raw "stop"
    "openai_chat/compat_xai_vercel_tool_call": (
        "tool_calls",
        (291, 26, 513, 196, 290),
    ),  # raw "tool_calls"
    "openai_chat/compat_zai_pydantic_ai_thinking": ("stop", (13, 564, 577, 561, 0)),  # raw "stop"
    "openai_chat/hand_braces_escaped_quotes": (
        "tool_calls",
        (132, 39, 171, 0, 0),
    ),  # raw "tool_calls"
    "openai_chat/hand_compat_args_object": ("tool_calls", None),  # raw "tool_calls"
    "openai_chat/hand_compat_args_whole": (
        "tool_calls",
        (231, 42, 273, None, None),
    ),  # raw "tool_calls"
    "openai_chat/hand_compat_deepseek_reasoning_call": (
        "tool_calls",
        (312, 41, 353, 14, 256),
    ),  # raw "tool_calls"
    "openai_chat/hand_compat_empty_id_null_name": (
        "tool_calls",
        (288, 21, 309, None, 0),
    ),  # raw "tool_calls"
    "openai_chat/hand_compat_error_frame": ("error", None),  # raw None
    # The legacy function_call's own finish reason, "function_call", is a tool call; no usage.
    "openai_chat/hand_legacy_function_call": ("tool_calls", None),  # raw "function_call"
    # A provider's error ends these (an `error` object, or vLLM's `object: error`): "error",
    # whatever finish_reason came with it; none sends usage.
    "openai_chat/hand_compat_error_first": ("error", None),  # raw None
    "openai_chat/hand_compat_openrouter_error_finish": ("error", None),  # raw "error"
    "openai_chat/hand_compat_vllm_error_object_first": ("error", None),  # raw None
    "openai_chat/hand_compat_vllm_error_object_mid": ("error", None),  # raw None
    "openai_chat/hand_compat_first_index_1": ("tool_calls", None),  # raw "tool_calls"
    "openai_chat/hand_compat_id_name_late": ("tool_calls", None),  # raw "tool_calls"
    "openai_chat/hand_compat_mistral_thinking_chunks": (
        "stop",
        (12, 49, 61, None, None),
    ),  # raw "stop"
    "openai_chat/hand_compat_no_index": ("tool_calls", None),  # raw "tool_calls"
    "openai_chat/hand_compat_repeated_id_name_type": ("tool_calls", None),  # raw "tool_calls"
    "openai_chat/hand_compat_same_index_twice": ("tool_calls", None),  # raw "tool_calls"
    "openai_chat/hand_compat_stop_with_calls": ("tool_calls", None),  # raw "stop"
    "openai_chat/hand_compat_tool_calls_object": ("tool_calls", None),  # raw "tool_calls"
    "openai_chat/hand_compat_usage_choices_absent": (
        "tool_calls",
        (70, 17, 87, 0, 0),
    ),  # raw "tool_calls"
    "openai_chat/hand_compat_usage_choices_empty": (
        "tool_calls",
        (70, 17, 87, 0, 0),
    ),  # raw "tool_calls"
    "openai_chat/hand_compat_usage_choices_null": (
        "tool_calls",
        (70, 17, 87, 0, 0),
    ),  # raw "tool_calls"
    "openai_chat/hand_length_cut_in_string": ("length", (74, 12, 86, 0, 0)),  # raw "length"
    "openai_chat/hand_no_args": ("tool_calls", (61, 11, 72, 0, 0)),  # raw "tool_calls"
    "openai_chat/hand_parallel_interleaved": (
        "tool_calls",
        (118, 47, 165, 0, 0),
    ),  # raw "tool_calls"
    "openai_chat/hand_text_before_after": ("tool_calls", (97, 31, 128, 0, 0)),  # raw "tool_calls"
    "openai_chat/hand_unicode_split_escape": (
        "tool_calls",
        (88, 24, 112, 0, 0),
    ),  # raw "tool_calls"
    "openai_chat/langchaingo_text": ("stop", (14, 13, 27, 0, 0)),  # raw "stop"
    "openai_chat/llm_tool_use_basic": ("tool_calls", (54, 20, 74, 0, 0)),  # raw "tool_calls"
    "openai_chat/oai_py_json_structured_text": ("stop", (79, 14, 93, 0, None)),  # raw "stop"
    "openai_chat/oai_py_logprobs": ("stop", (9, 2, 11, 0, None)),  # raw "stop"
    "openai_chat/oai_py_max_tokens_length": ("length", (79, 1, 80, 0, None)),  # raw "length"
    "openai_chat/oai_py_n3_choices": ("stop", (79, 42, 121, 0, None)),  # raw "stop"
    "openai_chat/oai_py_non_strict_tool": ("tool_calls", (44, 16, 60, 0, None)),  # raw "tool_calls"
    "openai_chat/oai_py_parallel_tools_a": (
        "tool_calls",
        (149, 60, 209, 0, None),
    ),  # raw "tool_calls"
    "openai_chat/oai_py_parallel_tools_b": (
        "tool_calls",
        (149, 60, 209, 0, None),
    ),  # raw "tool_calls"
    "openai_chat/oai_py_parallel_tools_c": (
        "tool_calls",
        (149, 60, 209, None, None),
    ),  # raw "tool_calls"
    "openai_chat/oai_py_parallel_tools_d": (
        "tool_calls",
        (149, 60, 209, None, None),
    ),  # raw "tool_calls"
    "openai_chat/oai_py_pydantic_tool": ("tool_calls", (76, 24, 100, 0, None)),  # raw "tool_calls"
    "openai_chat/oai_py_refusal": ("stop", (79, 11, 90, 0, None)),  # raw "stop"
    "openai_chat/oai_py_strict_tool": ("tool_calls", (48, 19, 67, 0, None)),  # raw "tool_calls"
    "openai_chat/oai_py_text": ("stop", (14, 30, 44, 0, None)),  # raw "stop"
    "openai_chat/pydantic_ai_text_after_tool": ("stop", (78, 9, 87, 0, 0)),  # raw "stop"
    "openai_chat/pydantic_ai_tool_call": ("tool_calls", (53, 15, 68, 0, 0)),  # raw "tool_calls"
    "openai_chat/vercel_azure_model_router_text": ("stop", (15, 78, 93, 64, 0)),  # raw "stop"
    "openai_chat/vercel_openai_text": ("stop", (16, 300, 316, 0, 0)),  # raw "stop"
    "openai_responses/hand_empty_delta": ("tool_calls", (64, 15, 79, 0, 0)),  # raw "completed"
    "openai_responses/hand_error_event": ("error", None),  # raw None
    # Custom tools (issue 20): completed with a runnable (free-form) call; usage as documented
    # (input 212 with 0 cached, output 58 with 0 reasoning, total 270).
    "openai_responses/hand_custom_tool_call": ("tool_calls", (212, 58, 270, 0, 0)),
    "openai_responses/hand_custom_and_function_call": ("tool_calls", (212, 58, 270, 0, 0)),
    "openai_responses/hand_incomplete_cut_in_string": (
        "length",
        (66, 16, 82, 0, 0),
    ),  # raw "max_output_tokens"
    "openai_responses/hand_no_args": ("tool_calls", (52, 12, 64, 0, 0)),  # raw "completed"
    "openai_responses/hand_parallel_interleaved": (
        "tool_calls",
        (86, 41, 127, 0, 0),
    ),  # raw "completed"
    "openai_responses/hand_reasoning_summary_call": (
        "tool_calls",
        (71, 188, 259, 128, 0),
    ),  # raw "completed"
    "openai_responses/hand_text_then_calls": ("tool_calls", (77, 38, 115, 0, 0)),  # raw "completed"
    "openai_responses/llm_text": ("stop", (11, 5, 16, 0, 0)),  # raw "completed"
    "openai_responses/llm_tool_use": ("tool_calls", (58, 23, 81, 0, 0)),  # raw "completed"
    "openai_responses/pydantic_ai_bedrock_mantle_tools": (
        "tool_calls",
        (88, 14, 102, 0, 0),
    ),  # raw "completed"
    "openai_responses/pydantic_ai_deepseek_responses_tool": (
        "tool_calls",
        (366, 59, 425, 14, 256),
    ),  # raw "completed"
    "openai_responses/pydantic_ai_phase_tool_call": (
        "tool_calls",
        (63, 69, 132, 26, 0),
    ),  # raw "completed"
    "openai_responses/pydantic_ai_reasoning_text": (
        "stop",
        (13, 1680, 1693, 1408, 0),
    ),  # raw "completed"
    "openai_responses/pydantic_ai_text_after_tool": (
        "stop",
        (278, 9, 287, 0, 0),
    ),  # raw "completed"
    "openai_responses/pydantic_ai_tool_call": (
        "tool_calls",
        (255, 16, 271, 0, 0),
    ),  # raw "completed"
    "openai_responses/vercel_azure_reasoning_tool_chain.part1": (
        "tool_calls",
        (137, 28, 165, 0, 0),
    ),  # raw "completed"
    "openai_responses/vercel_azure_reasoning_tool_chain.part2": (
        "tool_calls",
        (237, 26, 263, 0, 0),
    ),  # raw "completed"
    "openai_responses/vercel_azure_reasoning_tool_chain.part3": (
        "tool_calls",
        (276, 26, 302, 0, 0),
    ),  # raw "completed"
    "openai_responses/vercel_azure_reasoning_tool_chain.part4": (
        "stop",
        (315, 12, 327, 0, 0),
    ),  # raw "completed"
    "openai_responses/vercel_azure_text": ("stop", (11, 11, 22, 0, 0)),  # raw "completed"
    "openai_responses/vercel_azure_tool_call": (
        "tool_calls",
        (45, 24, 69, 0, 0),
    ),  # raw "completed"
    "openai_responses/vercel_lmstudio_tool_call": (
        "tool_calls",
        (182, 61, 243, 48, 2),
    ),  # raw "completed"
    "openai_responses/vercel_reasoning_tool_chain.part1": (
        "tool_calls",
        (134, 28, 162, 0, 0),
    ),  # raw "completed"
    "openai_responses/vercel_reasoning_tool_chain.part2": (
        "tool_calls",
        (221, 26, 247, 0, 0),
    ),  # raw "completed"
    "openai_responses/vercel_reasoning_tool_chain.part3": (
        "tool_calls",
        (260, 26, 286, 0, 0),
    ),  # raw "completed"
    "openai_responses/vercel_reasoning_tool_chain.part4": (
        "stop",
        (299, 12, 311, 0, 0),
    ),  # raw "completed"
    "openai_responses/vercel_tool_search_then_call": (
        "tool_calls",
        (640, 46, 686, 20, 0),
    ),  # raw "completed"
    "anthropic_messages/hand_error_overloaded": ("error", (412, 1, 413, None, 0)),  # raw None
    "anthropic_messages/hand_max_tokens_cut_in_string": (
        "length",
        (455, 64, 519, None, 0),
    ),  # raw "max_tokens"
    "anthropic_messages/hand_parallel_tool_use": (
        "tool_calls",
        (412, 96, 508, None, 0),
    ),  # raw "tool_use"
    "anthropic_messages/hand_text_before_after": (
        "tool_calls",
        (412, 71, 483, None, 0),
    ),  # raw "tool_use"
    "anthropic_messages/hand_thinking_redacted_tool_use": (
        "tool_calls",
        (521, 164, 685, None, 0),
    ),  # raw "tool_use"
    "anthropic_messages/hand_tool_use_no_delta": (
        "tool_calls",
        (388, 38, 426, None, 0),
    ),  # raw "tool_use"
    "anthropic_messages/hand_unicode_split_escape": (
        "tool_calls",
        (412, 58, 470, None, 0),
    ),  # raw "tool_use"
    "anthropic_messages/langchaingo_text": ("stop", (15, 13, 28, None, 0)),  # raw "end_turn"
    "anthropic_messages/llm_anthropic_parallel_tools": (
        "tool_calls",
        (542, 62, 604, None, 0),
    ),  # raw "tool_use"
    "anthropic_messages/llm_anthropic_text": ("stop", (17, 10, 27, None, 0)),  # raw "end_turn"
    "anthropic_messages/llm_anthropic_thinking": (
        "stop",
        (46, 133, 179, None, 0),
    ),  # raw "end_turn"
    "anthropic_messages/llm_anthropic_thinking_tool_use": (
        "tool_calls",
        (598, 92, 690, 53, 0),  # output_tokens_details.thinking_tokens 53, within the 92
    ),  # raw "tool_use"
    "anthropic_messages/llm_anthropic_tool_use": (
        "tool_calls",
        (543, 40, 583, None, 0),
    ),  # raw "tool_use"
    "anthropic_messages/pydantic_ai_redacted_thinking": (
        "stop",
        (92, 189, 281, None, 0),
    ),  # raw "end_turn"
    "anthropic_messages/pydantic_ai_thinking": ("stop", (43, 282, 325, None, 0)),  # raw "end_turn"
    "anthropic_messages/vercel_mcp_tool_use": ("stop", (1250, 83, 1333, None, 0)),  # raw "end_turn"
    "anthropic_messages/vercel_text": ("stop", (12, 30, 42, None, 0)),  # raw "end_turn"
    "anthropic_messages/vercel_text_then_tool_use": (
        "tool_calls",
        (849, 47, 896, None, 0),
    ),  # raw "tool_use"
    "anthropic_messages/vercel_thinking": ("stop", (69, 53, 122, None, 0)),  # raw "end_turn"
    "anthropic_messages/vercel_thinking_context_editing": (
        "stop",
        (50, 485, 535, None, 0),
    ),  # raw "end_turn"
    "anthropic_messages/vercel_tool_no_args": (
        "tool_calls",
        (565, 48, 613, None, 0),
    ),  # raw "tool_use"
    "anthropic_messages/vercel_tool_search_deferred.part1": (
        "tool_calls",
        (879, 177, 1056, None, 0),
    ),  # raw "tool_use"
    "anthropic_messages/vercel_tool_search_deferred.part2": (
        "tool_calls",
        (1398, 213, 1611, None, 0),
    ),  # raw "tool_use"
    "anthropic_messages/vercel_tool_search_deferred.part3": (
        "stop",
        (1639, 95, 1734, None, 0),
    ),  # raw "end_turn"
    "anthropic_messages/vercel_tool_use": ("tool_calls", (849, 47, 896, None, 0)),  # raw "tool_use"
    "anthropic_messages/vercel_tool_use_other": (
        "tool_calls",
        (843, 28, 871, None, 0),
    ),  # raw "tool_use"
    # A stream that opens with an exception event (issue 20): the provider's error, no usage.
    "bedrock_converse/hand_exception_first_throttling_frames": ("error", None),  # raw None
    "bedrock_converse/hand_exception_first_validation_boto3": ("error", None),  # raw None
    "bedrock_converse/hand_exception_model_stream_boto3": ("error", None),  # raw None
    "bedrock_converse/hand_exception_throttling_frames": ("error", None),  # raw None
    "bedrock_converse/hand_max_tokens_cut_in_string": (
        "length",
        (377, 40, 417, None, None),
    ),  # raw "max_tokens"
    "bedrock_converse/hand_parallel_tool_use_boto3": (
        "tool_calls",
        (402, 97, 499, None, None),
    ),  # raw "tool_use"
    "bedrock_converse/hand_parallel_tool_use_frames": (
        "tool_calls",
        (402, 97, 499, None, None),
    ),  # raw "tool_use"
    "bedrock_converse/hand_reasoning_redacted_text": (
        "stop",
        (58, 142, 200, None, None),
    ),  # raw "end_turn"
    "bedrock_converse/pydantic_ai_claude_native_output": (
        "stop",
        (210, 18, 228, None, None),
    ),  # raw "end_turn"
    "bedrock_converse/pydantic_ai_claude_redacted_thinking": (
        "stop",
        (92, 253, 345, None, None),
    ),  # raw "end_turn"
    "bedrock_converse/pydantic_ai_claude_thinking": (
        "stop",
        (36, 73, 109, None, None),
    ),  # raw "end_turn"
    "bedrock_converse/pydantic_ai_gpt_oss_reasoning": (
        "stop",
        (70, 43, 113, None, None),
    ),  # raw "end_turn"
    "bedrock_converse/pydantic_ai_nova_code_execution": (
        "tool_calls",
        (1002, 59, 1061, None, None),
    ),  # raw "tool_use"
    "bedrock_converse/pydantic_ai_nova_text": ("stop", (13, 82, 95, None, None)),  # raw "end_turn"
    "bedrock_converse/pydantic_ai_nova_text_after_tool": (
        "stop",
        (577, 18, 595, None, None),
    ),  # raw "end_turn"
    "bedrock_converse/pydantic_ai_nova_tool_use": (
        "tool_calls",
        (471, 91, 562, None, None),
    ),  # raw "tool_use"
    "bedrock_converse/vercel_reasoning": ("stop", (51, 94, 145, None, None)),  # raw "end_turn"
    "bedrock_converse/vercel_text": ("stop", (22, 55, 77, None, None)),  # raw "end_turn"
    "gemini/hand_parallel_calls_ids": ("tool_calls", (74, 79, 153, 51, None)),  # raw "STOP"
    "gemini/hand_partial_args_stream": ("tool_calls", (58, 229, 287, 188, None)),  # raw "STOP"
    "gemini/hand_text_then_call_finish": ("tool_calls", (41, 68, 109, 37, None)),  # raw "STOP"
    "gemini/hand_thought_parts_signature": ("stop", (18, 113, 131, 104, None)),  # raw "STOP"
    "gemini/langchaingo_text_jsonarray": ("stop", (8, 578, 586, None, None)),  # raw "1"
    "gemini/llm_gemini3_function_call_jsonarray": (
        "tool_calls",
        (60, 48, 108, 32, None),
    ),  # raw "STOP"
    "gemini/llm_gemini_function_call_jsonarray": (
        "tool_calls",
        (32, 54, 86, 42, None),
    ),  # raw "STOP"
    "gemini/llm_gemini_thought_text_jsonarray": ("stop", (11, 293, 304, 291, None)),  # raw "STOP"
    "gemini/pydantic_ai_fc_native_output": ("tool_calls", (29, 81, 110, 69, None)),  # raw "STOP"
    "gemini/pydantic_ai_fc_thought_signature": (
        "tool_calls",
        (29, 212, 241, 202, None),
    ),  # raw "STOP"
    "gemini/pydantic_ai_function_call": ("tool_calls", (52, 5, 57, None, None)),  # raw "STOP"
    "gemini/pydantic_ai_function_call_2": ("tool_calls", (64, 5, 69, None, None)),  # raw "STOP"
    "gemini/pydantic_ai_text": ("stop", (13, 8, 21, None, None)),  # raw "STOP"
    "gemini/pydantic_ai_thinking": ("stop", (34, 1256, 1290, 787, None)),  # raw "STOP"
    "gemini/vercel_function_call": ("tool_calls", (29, 60, 89, 45, None)),  # raw "STOP"
    "gemini/vercel_function_call_gemini3": ("tool_calls", (29, 819, 848, 804, None)),  # raw "STOP"
    "gemini/vercel_stream_fc_array_args": ("tool_calls", (54, 195, 249, 121, None)),  # raw "STOP"
    "gemini/vercel_stream_fc_no_args": ("tool_calls", (249, 241, 490, 183, None)),  # raw "STOP"
    "gemini/vercel_stream_fc_partial_args": ("tool_calls", (26, 155, 181, 132, None)),  # raw "STOP"
    "gemini/vercel_text": ("stop", (9, 208, 217, 185, None)),  # raw "STOP"
    "gemini/vercel_text_thought_signature": ("stop", (9, 285, 294, 256, None)),  # raw "STOP"
    "gemini/vercel_vertex_stream_fc_nested": (
        "tool_calls",
        (31, 1710, 1741, 1026, None),
    ),  # raw "STOP"
    "cohere_v2/hand_citations": ("stop", (1061, 85, 1146, None, 0)),  # raw "COMPLETE"
    "cohere_v2/hand_no_arg_call": ("tool_calls", (1187, 41, 1228, None, 704)),  # raw "TOOL_CALL"
    "cohere_v2/hand_tool_plan_two_calls": (
        "tool_calls",
        (913, 83, 996, None, 0),
    ),  # raw "TOOL_CALL"
    "cohere_v2/vercel_empty_tool_call": (
        "tool_calls",
        (1445, 43, 1488, None, 704),
    ),  # raw "TOOL_CALL"
    "cohere_v2/vercel_reasoning": ("stop", (1394, 54, 1448, None, 1360)),  # raw "COMPLETE"
    "cohere_v2/vercel_text": ("stop", (507, 10, 517, None, 448)),  # raw "COMPLETE"
    "cohere_v2/vercel_tool_call": ("tool_calls", (1549, 95, 1644, None, 1504)),  # raw "TOOL_CALL"
    "ollama/hand_calls_on_done_line": ("tool_calls", (188, 64, 252, None, None)),  # raw "stop"
    "ollama/hand_thinking_two_calls": ("tool_calls", (212, 96, 308, None, None)),  # raw "stop"
    "ollama/hand_tool_call_whole": ("tool_calls", (143, 27, 170, None, None)),  # raw "stop"
    "ollama/langchaingo_chat_text": ("stop", (18, 203, 221, None, None)),  # raw "stop"
    "ollama/langchaingo_chat_text_think_opt": ("stop", (23, 102, 125, None, None)),  # raw "stop"
    "ollama/langchaingo_client_chat_stream": ("stop", (16, 22, 38, None, None)),  # raw "stop"
    "ollama/langchaingo_client_chat_text_think_opt": (
        "stop",
        (20, 55, 75, None, None),
    ),  # raw "stop"
}


def _expected(path) -> tuple[str | None, engine.Usage | None]:
    finish, counts = EXPECTED[stream_id(path)]
    return finish, engine.Usage(*counts) if counts is not None else None


def test_every_golden_of_every_wire_has_its_row():
    assert sorted(stream_id(p) for p in STREAMS) == sorted(EXPECTED)
    assert {sid.split("/")[0] for sid in EXPECTED} == set(WIRES)


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_finish_reason_and_token_usage_are_the_documented_ones(path):
    buf = engine.LLMStreamBuffer(events=True)
    told = list(buf.consume(read_stream(path)))
    finish, usage = _expected(path)
    assert (buf.finish_reason, buf.token_usage) == (finish, usage)
    # Finished carries both, beside the raw ones, which stay as the wire sent them.
    (finished,) = [e for e in told if isinstance(e, engine.Finished)]
    assert (finished.finish_reason, finished.token_usage) == (finish, usage)
    assert (finished.stop_reason, finished.usage) == (buf.stop_reason, buf.usage)
    assert buf.stop_reason is None or isinstance(buf.stop_reason, str)


# A text-only stream of each wire, and where its raw stop reason stands (the key that holds
# it, in whichever event carries it).
UNMAPPED = {
    "openai_chat": ("oai_py_text", "finish_reason"),
    "openai_responses": ("llm_text", "status"),
    "anthropic_messages": ("llm_anthropic_text", "stop_reason"),
    "bedrock_converse": ("vercel_text", "stopReason"),
    "gemini": ("pydantic_ai_text", "finishReason"),
    "cohere_v2": ("vercel_text", "finish_reason"),
    "ollama": ("langchaingo_chat_text", "done_reason"),
}


def _renamed(value: Any, key: str, old: str, new: str) -> Any:
    """``value`` with every ``key: old`` set to ``key: new``, at any depth."""
    if isinstance(value, dict):
        return {
            k: new if k == key and v == old else _renamed(v, key, old, new)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_renamed(v, key, old, new) for v in value]
    return value


@pytest.mark.parametrize("wire", WIRES)
def test_a_raw_reason_the_mapping_does_not_name_is_other(wire):
    stem, key = UNMAPPED[wire]
    stream = read_stream(GOLDEN / wire / f"{stem}.jsonl")
    before = engine.LLMStreamBuffer()
    for chunk in copy.deepcopy(stream):
        before.add(chunk)
    assert before.finish_reason == "stop"
    buf = engine.LLMStreamBuffer([engine.load_format(wire)])
    for chunk in _renamed(stream, key, before.stop_reason, "A_REASON_NOBODY_DOCUMENTS"):
        buf.add(chunk)
    assert buf.is_finished() and buf.stop_reason == "A_REASON_NOBODY_DOCUMENTS"
    assert buf.finish_reason == "other"
    assert buf.token_usage == before.token_usage


def test_no_finish_reason_before_the_done_nor_without_it():
    stream = read_stream(GOLDEN / "anthropic_messages" / "llm_anthropic_text.jsonl")
    buf = engine.LLMStreamBuffer()
    assert buf.finish_reason is None and buf.token_usage is None
    for chunk in stream[:-1]:  # all but message_stop: the stop reason came, the DONE not
        buf.add(chunk)
        assert buf.finish_reason is None
    assert buf.stop_reason == "end_turn"
    buf.close()
    assert buf.finish_reason is None
    assert buf.token_usage == engine.Usage(17, 10, 27, None, 0)  # the usage it did send


def _anthropic_usages() -> tuple[list[dict], list[dict]]:
    """llm_anthropic_text, and its usage objects: message_start's and message_delta's (which
    restates the counts so far)."""
    stream = read_stream(GOLDEN / "anthropic_messages" / "llm_anthropic_text.jsonl")
    usages = [stream[0]["message"]["usage"]]
    usages += [c["usage"] for c in stream if c["type"] == "message_delta"]
    return stream, usages


def _anthropic_with_cache(read: int, written: int) -> list[dict]:
    stream, usages = _anthropic_usages()
    for usage in usages:
        usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"] = read, written
    return stream


def test_anthropic_input_adds_the_cache_reads_and_writes():
    # llm_anthropic_text: input_tokens 17, output_tokens 10; with 1000 read from the cache
    # and 200 written to it, the request's input is 17 + 1000 + 200 (prompt caching docs:
    # "total input tokens = cache_read_input_tokens + cache_creation_input_tokens +
    # input_tokens").
    buf = engine.LLMStreamBuffer()
    for chunk in _anthropic_with_cache(1000, 200):
        buf.add(chunk)
    assert buf.token_usage == engine.Usage(1217, 10, 1227, None, 1000)
    assert buf.usage is not None and buf.usage["input_tokens"] == 17  # the raw one stays


def test_a_sum_is_none_only_when_every_part_is_absent():
    stream, usages = _anthropic_usages()
    for usage in usages:
        del usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]
    buf = engine.LLMStreamBuffer()
    for chunk in copy.deepcopy(stream):
        buf.add(chunk)
    assert buf.token_usage == engine.Usage(17, 10, 27, None, None)
    for usage in usages:
        del usage["input_tokens"]
    buf = engine.LLMStreamBuffer()
    for chunk in stream:
        buf.add(chunk)
    # No part of the input is known: no input count, and no total.
    assert buf.token_usage == engine.Usage(None, 10, None, None, None)


def test_bedrock_input_adds_the_cache_reads_and_writes():
    stream = read_stream(GOLDEN / "bedrock_converse" / "vercel_text.jsonl")
    metadata = stream[-1]
    usage = (metadata.get("metadata") or metadata)["usage"]
    assert (usage["inputTokens"], usage["outputTokens"], usage["totalTokens"]) == (22, 55, 77)
    usage.update(cacheReadInputTokens=300, cacheWriteInputTokens=40, totalTokens=417)
    buf = engine.LLMStreamBuffer()
    for chunk in stream:
        buf.add(chunk)
    assert buf.token_usage == engine.Usage(362, 55, 417, None, 300)


def test_gemini_output_adds_the_thoughts_and_reads_the_cached_content():
    stream = read_stream(GOLDEN / "gemini" / "vercel_text.jsonl")
    stream[-1]["usageMetadata"]["cachedContentTokenCount"] = 4
    buf = engine.LLMStreamBuffer()
    for chunk in stream:
        buf.add(chunk)
    # promptTokenCount 9 (cached content included), candidatesTokenCount 23 and
    # thoughtsTokenCount 185, totalTokenCount 217.
    assert buf.token_usage == engine.Usage(9, 208, 217, 185, 4)


def test_a_stop_is_tool_calls_only_with_a_runnable_call():
    """Gemini says STOP beside its calls: tool_calls. The same stream with the call's name
    gone has no runnable call: stop."""
    stream = read_stream(GOLDEN / "gemini" / "pydantic_ai_function_call.jsonl")
    buf = engine.LLMStreamBuffer()
    for chunk in copy.deepcopy(stream):
        buf.add(chunk)
    assert buf.calls() and buf.finish_reason == "tool_calls"
    for chunk in stream:
        for candidate in chunk.get("candidates", []):
            for part in candidate["content"]["parts"]:
                part.pop("functionCall", None)
                part.setdefault("text", "")
    buf = engine.LLMStreamBuffer()
    for chunk in stream:
        buf.add(chunk)
    assert not buf.calls() and buf.finish_reason == "stop"


def test_the_finish_reasons_are_a_literal_and_usage_is_frozen():
    assert engine.FINISH_REASONS == (
        "stop",
        "length",
        "tool_calls",
        "content_filter",
        "error",
        "other",
    )
    usage = engine.Usage(1, 2, 3)
    with pytest.raises(AttributeError):
        usage.input_tokens = 5  # type: ignore[misc]
    finished = engine.Finished("stop", {"a": 1}, "stop", usage)
    assert json.loads(json.dumps(finished.to_dict()))["token_usage"] == {
        "input_tokens": 1,
        "output_tokens": 2,
        "total_tokens": 3,
        "reasoning_tokens": None,
        "cached_input_tokens": None,
    }
    assert engine.Finished("stop", None) == engine.Finished("stop", None, None, None)


def test_every_builtin_declares_both_sections():
    for name in WIRES:
        descriptor = engine.load_format(name).descriptor
        assert descriptor.get("finish_reasons") and descriptor.get("token_usage"), name
