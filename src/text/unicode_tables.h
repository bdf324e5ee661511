// unicode_tables.h: code point ranges for the GPT-2 pre-tokenizer's classes \p{L}, \p{N} and \s, from
// Unicode 16.0 as tiktoken has them. The data is generated (unicode_tables.cpp by
// tests/node/gen_unicode_tables.mjs); lookup structures are built by the tokenizer, not here.
#pragma once
#include <cstddef>
#include <cstdint>

struct UnicodeRange {
    uint32_t lo, hi;  // inclusive
};

extern const char* const kUnicodeVersion;
extern const UnicodeRange kUnicodeLetters[];  // general categories L*
extern const size_t kUnicodeLettersCount;
extern const UnicodeRange kUnicodeNumbers[];  // general categories N*
extern const size_t kUnicodeNumbersCount;
extern const UnicodeRange kUnicodeSpaces[];  // White_Space, i.e. Rust regex's (tiktoken's) \s
extern const size_t kUnicodeSpacesCount;
