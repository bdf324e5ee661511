// instructions.cpp: see instructions.h.
#include "text/instructions.h"

#include "text/json_lines.h"

namespace {

// Stanford Alpaca's two prompts (its train.py PROMPT_DICT); the output follows "### Response:" directly.
const char* const kAlpacaWithInput =
    "Below is an instruction that describes a task, paired with an input that provides further context. Write a "
    "response that appropriately completes the request.\n\n### Instruction:\n";
const char* const kAlpacaNoInput =
    "Below is an instruction that describes a task. Write a response that appropriately completes the "
    "request.\n\n### Instruction:\n";

bool fail(std::string* err, const std::string& message) {
    *err = message;
    return false;
}

// The string field `key` of obj into *out; false with *err when it is missing (unless optional) or no string.
bool string_field(const Json& obj, const char* key, bool optional, std::string* out, std::string* err,
                  const char* where = "") {
    const Json* j = obj.find(key);
    if (!j && optional) return true;
    if (!j) return fail(err, std::string("expected a field \"") + key + "\"" + where + ", got none");
    if (j->type != Json::STRING)
        return fail(err, std::string("expected \"") + key + "\"" + where + " to be a string, got " +
                             json_type_name(j->type));
    *out = j->str;
    return true;
}

// A message's content: a string, or OpenAI's array of parts, of which the "text" ones are joined (reply: serving
// accepts both; training data takes the string).
bool content_text(const Json& m, bool reply, std::string* out, std::string* err, const std::string& where) {
    const Json* c = m.find("content");
    if (!reply || !c || c->type != Json::ARRAY) return string_field(m, "content", false, out, err, where.c_str());
    out->clear();
    for (const Json& part : c->items) {
        const Json* type = part.find("type");
        const Json* text = part.find("text");
        if (!type || type->type != Json::STRING || type->str != "text" || !text || text->type != Json::STRING)
            return fail(err, "expected each part of \"content\"" + where + " to be {\"type\": \"text\", \"text\": "
                             "STRING} (text only), got another");
        *out += text->str;
    }
    return true;
}

// reply: the prompt for the next assistant turn (serving): the chat ends with the user's message, then
// "Assistant:"; "developer" is a system message, as OpenAI's newer models name it.
bool chat_segments(const Json& messages, std::vector<InstructionSegment>* out, std::string* err, bool reply) {
    if (messages.type != Json::ARRAY || messages.items.empty())
        return fail(err, std::string("expected \"messages\" to be a non-empty array of {\"role\", \"content\"}, got ") +
                             (messages.type == Json::ARRAY ? "an empty array" : json_type_name(messages.type)));
    for (size_t i = 0; i < messages.items.size(); i++) {
        const Json& m = messages.items[i];
        const std::string where = " in message " + std::to_string(i + 1);
        if (m.type != Json::OBJECT)
            return fail(err, "expected message " + std::to_string(i + 1) + " to be an object with \"role\" and "
                             "\"content\", got " + json_type_name(m.type));
        std::string role, content;
        if (!string_field(m, "role", false, &role, err, where.c_str()) || !content_text(m, reply, &content, err, where))
            return false;
        if (reply && role == "developer") role = "system";
        const bool last = i + 1 == messages.items.size() && !reply;
        if (role == "system" && i == 0) {
            out->push_back({"System: " + content + "\n", false});
        } else if (role == "user") {
            out->push_back({"User: " + content + "\n", false});
        } else if (role == "assistant") {
            out->push_back({"Assistant:", false});
            out->push_back({" " + content + (last ? "" : "\n"), true});
        } else {
            return fail(err, "expected the role" + where + " to be " +
                                 (role == "system" ? "user or assistant (system comes first only)"
                                                   : "system, user or assistant") +
                                 ", got \"" + role + "\"");
        }
        if (last && role != "assistant")
            return fail(err, "expected the last message to be the assistant's (the answer to learn), got \"" + role +
                                 "\"");
        if (reply && i + 1 == messages.items.size() && role != "user")
            return fail(err, "expected the last message to be the user's (the one to answer), got \"" + role + "\"");
    }
    if (reply) out->push_back({"Assistant:", false});
    return true;
}

}  // namespace

bool instruction_segments(const Json& line, std::vector<InstructionSegment>* out, InstructionShape* shape,
                          std::string* err) {
    out->clear();
    if (line.type != Json::OBJECT)
        return fail(err, std::string("expected a JSON object, got ") + json_type_name(line.type));
    const bool chat = line.find("messages"), alpaca = line.find("instruction"), pc = line.find("prompt");
    if (chat + alpaca + pc != 1) {
        std::string keys;
        for (const auto& kv : line.members) keys += (keys.empty() ? "\"" : ", \"") + kv.first + "\"";
        if (chat + alpaca + pc > 1) return fail(err, "expected the keys of one shape, got those of several: " + keys);
        return fail(err, "expected {\"prompt\", \"completion\"}, Alpaca's {\"instruction\", \"input\", \"output\"} "
                         "or chat's {\"messages\"}, got keys " + (keys.empty() ? "(none)" : keys));
    }
    if (chat) {
        *shape = InstructionShape::kChat;
        return chat_segments(*line.find("messages"), out, err, false);
    }
    std::string prompt, input, answer;
    if (alpaca) {
        *shape = InstructionShape::kAlpaca;
        if (!string_field(line, "instruction", false, &prompt, err) || !string_field(line, "input", true, &input, err) ||
            !string_field(line, "output", false, &answer, err))
            return false;
        prompt = input.empty() ? kAlpacaNoInput + prompt + "\n\n### Response:"
                               : kAlpacaWithInput + prompt + "\n\n### Input:\n" + input + "\n\n### Response:";
    } else {
        *shape = InstructionShape::kPromptCompletion;
        if (!string_field(line, "prompt", false, &prompt, err) || !string_field(line, "completion", false, &answer, err))
            return false;
    }
    out->push_back({prompt, false});
    out->push_back({answer, true});
    return true;
}

bool chat_prompt_segments(const Json& messages, std::vector<InstructionSegment>* out, std::string* err) {
    out->clear();
    return chat_segments(messages, out, err, true);
}
