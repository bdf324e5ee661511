// json_lines.cpp: see json_lines.h.
#include "text/json_lines.h"

bool json_parse_line(const char* text, size_t n, Json* out, std::string* err) {
    if (json_parse(text, n, out, err)) return true;
    if (err->compare(0, 8, "line 1: ") == 0) err->erase(0, 8);  // the text is one line: its number is the caller's
    return false;
}

const char* json_type_name(Json::Type type) {
    switch (type) {
        case Json::NUL: return "null";
        case Json::BOOL: return "a boolean";
        case Json::NUMBER: return "a number";
        case Json::STRING: return "a string";
        case Json::ARRAY: return "an array";
        case Json::OBJECT: return "an object";
    }
    return "?";
}
