// json_lines.h: JSON lines files (train --log's run logs, HellaSwag's examples, tokenize's --jsonl-field
// inputs), one value a line, read with core/json.h's reader; and the words their errors use.
#pragma once
#include <cstddef>
#include <string>

#include "core/json.h"

// Parses one line; on failure err is the reader's message without its "line 1: " (the caller names the line).
bool json_parse_line(const char* text, size_t n, Json* out, std::string* err);
// "null", "a boolean", "a number", "a string", "an array", "an object": for messages ("expected a
// string, got an array").
const char* json_type_name(Json::Type type);
