#!/usr/bin/env bash
# Seeds for fuzz_request_json: valid and near-valid request bodies. Usage: $0 CORPUS_DIR
set -euo pipefail
dir=${1:?usage: fuzz_request_json_seeds.sh CORPUS_DIR}
mkdir -p "$dir"
i=0
seed() { printf '%s' "$1" >"$dir/seed_$i.json"; i=$((i + 1)); }
seed '{"prompt": "Hello", "max_tokens": 16, "temperature": 0.7, "top_p": 0.9, "stop": ["\n"]}'
seed '{"prompt": [1, 2, 3], "n": 2, "logprobs": 3, "echo": false, "seed": 42}'
seed '{"prompt": [[1, 2], [3]], "logit_bias": {"5": -100, "7": 2.5}, "top_k": -1}'
seed '{"prompt": ["a", "b"], "stream": true, "stream_options": {"include_usage": true}}'
seed '{"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}]}'
seed '{"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}], "logprobs": true, "top_logprobs": 5}'
seed '{"messages": [{"role": "assistant", "content": null}], "max_completion_tokens": 4, "min_tokens": 2}'
seed '{"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "text"}, "chat_template_kwargs": {"a": [1, {"b": null}]}}'
seed '{"prompt": "\ud83e\udd99", "repetition_penalty": 1.1, "presence_penalty": -2, "frequency_penalty": 2, "min_p": 0.05}'
seed '{"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema", "json_schema": {"name": "n", "strict": true, "schema": {"type": "object", "properties": {"a": {"type": "string"}}}}}}'
seed '{"prompt": "x", "guided_choice": ["a", "b"], "structured_outputs": {"regex": "[0-9]+"}}'
seed '{"prompt": "x", "guided_json": "{\"type\": \"integer\"}", "grammar": "root ::= [a]"}'
seed '{"messages": [{"role": "user", "content": "w"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"c": {"type": "string"}}, "required": ["c"]}}}], "tool_choice": {"type": "function", "function": {"name": "f"}}, "parallel_tool_calls": false}'
seed '{"messages": [{"role": "user", "content": "w"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"c\": 1}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "r"}], "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "required"}'
