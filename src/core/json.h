// json.h: a small strict JSON reader (RFC 8259) for safetensors headers, config.json and encoder.json: object
// keys in file order, \u escapes (surrogate pairs too) decoded to UTF-8, nesting depth limited so that hostile
// input cannot overflow the stack. Writers format their own JSON, quoting strings with json_escape.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

struct Json {
    enum Type { NUL, BOOL, NUMBER, STRING, ARRAY, OBJECT } type = NUL;
    bool boolean = false;
    double number = 0;
    bool is_integer = false;  // number written without fraction or exponent and fits int64
    int64_t integer = 0;
    std::string str;
    std::vector<Json> items;                            // ARRAY
    std::vector<std::pair<std::string, Json>> members;  // OBJECT, in file order

    const Json* find(const std::string& key) const;  // nullptr if absent or not an object
};

// Parses the whole text; false with a message ("line 3: expected ':'") on malformed input.
bool json_parse(const char* text, size_t n, Json* out, std::string* err);
std::string json_escape(const std::string& s);
