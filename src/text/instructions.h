// instructions.h: instruction data for fine-tuning, as JSON lines in the three shapes people have, each line
// turned into text segments that are scored (the answer) or not (the prompt), for tokenize --instructions:
//   {"prompt": P, "completion": C}                     P, then C (as TRL's prompt-completion data)
//   {"instruction": I, "input": X, "output": O}        Alpaca: Stanford's prompt template (the one without
//                                                      "### Input:" when X is empty or absent), then O
//   {"messages": [{"role": R, "content": S}, ...]}     chat, in gpt2.cpp's template for GPT-2 (which has none):
//       system     "System: S\n"       (first message only)
//       user       "User: S\n"
//       assistant  "Assistant:" then " S\n" scored (the last message must be the assistant's; its "\n" is
//                  left out, <|endoftext|> ends the example)
// Only the answer is scored: C, O, the assistant's " S\n". The caller encodes each segment on its own and ends
// every example with a scored <|endoftext|>, so the model learns to stop. Other keys are ignored.
#pragma once
#include <string>
#include <vector>

#include "core/json.h"

struct InstructionSegment {
    std::string text;
    bool scored;
};

enum class InstructionShape { kPromptCompletion, kAlpaca, kChat };

// One JSON line's segments; false with *err (what was expected, for the caller to name the file and line) on
// an object of no known shape (or of two), a field that is not a string, a message without role or content,
// an unknown role, a system message after the first, or a chat that does not end with the assistant.
bool instruction_segments(const Json& line, std::vector<InstructionSegment>* out, InstructionShape* shape,
                          std::string* err);
