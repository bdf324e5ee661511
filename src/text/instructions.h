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
//
// Prompt a model trained so with "User: ...\nAssistant:" and stop at <|endoftext|>. tokenize --instructions
// (cli/tokenize_cmd.cpp) packs examples whole into -T windows (best fit; each window starts with <|endoftext|>, the
// rest padded with it, not scored; formats/loss_mask.h); one longer than -T tokens is split across windows and
// counted, and stderr reports the packing (examples, windows, tokens used of those written, how many scored). Val is
// 10% of the examples (--val-examples N), every tenth (N: every (examples / N)-th, the last included), counted over
// all the inputs in input order: spread over them, but an input with fewer examples than that stride may have none.
// A line of no known shape, a field that is not a string, a chat message without role or content, an unknown role,
// or a line longer than --max-unsplit-bytes is an error naming the file and line; a signal leaves no outputs, and
// the four files are published together. Every example is held in memory until the split (about 6 times the input),
// so the inputs may hold 1 GiB in all: more is an error naming the file that crosses it.
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
// The prompt a model trained on chat data answers: messages (an array of {"role", "content"}, system or
// developer first, then user and assistant turns, ending with the user's; a content may also be OpenAI's array
// of text parts) as the template above gives them, then "Assistant:" to answer after (an earlier assistant turn
// is " S\n", as trained). false with *err as instruction_segments'.
bool chat_prompt_segments(const Json& messages, std::vector<InstructionSegment>* out, std::string* err);
