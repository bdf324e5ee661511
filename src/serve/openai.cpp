// openai.cpp: see openai.h.
#include "serve/openai.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "text/instructions.h"
#include "text/json_lines.h"

namespace {

// What a request may ask at most: choices per request, stop strings and their bytes.
const int kMaxChoices = 16, kMaxStops = 4;
const size_t kMaxStopBytes = 256;

std::string number_text(double x) {
    char buf[64];
    snprintf(buf, sizeof(buf), "%.17g", x);
    return buf;
}

// What a field held, for a message: its number, or its type.
std::string got(const Json& v) { return v.type == Json::NUMBER ? number_text(v.number) : json_type_name(v.type); }

// body's field `key` as an integer in [lo, hi] (fallback when absent or null); "" or the message.
std::string int_field(const Json& body, const char* key, long long lo, long long hi, long long* out) {
    const Json* v = body.find(key);
    if (!v || v->type == Json::NUL) return "";
    if (v->type != Json::NUMBER || !v->is_integer || v->integer < lo || v->integer > hi)
        return std::string("'") + key + "' must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi) +
               ", got " + got(*v);
    *out = v->integer;
    return "";
}

std::string number_field(const Json& body, const char* key, double lo, double hi, float* out) {
    const Json* v = body.find(key);
    if (!v || v->type == Json::NUL) return "";
    if (v->type != Json::NUMBER || !(v->number >= lo && v->number <= hi))
        return std::string("'") + key + "' must be a number in " + number_text(lo) + ".." + number_text(hi) +
               ", got " + got(*v);
    *out = (float)v->number;
    return "";
}

std::string bool_field(const Json& body, const char* key, bool* out) {
    const Json* v = body.find(key);
    if (!v || v->type == Json::NUL) return "";
    if (v->type != Json::BOOL) return std::string("'") + key + "' must be a boolean, got " + got(*v);
    *out = v->boolean;
    return "";
}

// A prompt of token ids: each in the vocabulary.
std::string ids_prompt(const Json& a, int V, std::vector<int>* ids) {
    if (a.items.empty()) return "'prompt' must not be an empty array of token ids";
    for (const Json& t : a.items) {
        if (t.type != Json::NUMBER || !t.is_integer || t.integer < 0 || t.integer >= V)
            return "'prompt' token ids must be integers in 0.." + std::to_string(V - 1) + ", got " + got(t);
        ids->push_back((int)t.integer);
    }
    return "";
}

// A text prompt, or <|endoftext|> for "" (as generate starts without a prompt).
std::string text_prompt(const std::string& text, Tokenizer* tok, int V, std::vector<int>* ids) {
    if (text.empty() && kTokenizerEot >= V)
        return "'prompt' must not be empty for a model without <|endoftext|> (its vocabulary has " + std::to_string(V) +
               " tokens)";
    *ids = text.empty() ? std::vector<int>{kTokenizerEot} : tokenizer_encode(tok, text);
    return "";
}

std::string read_prompts(const Json& body, Tokenizer* tok, int V, std::vector<std::vector<int>>* prompts) {
    const Json* p = body.find("prompt");
    if (!p || p->type == Json::NUL) return "'prompt' is required: a string, an array of strings or of token ids";
    if (p->type == Json::STRING) return prompts->emplace_back(), text_prompt(p->str, tok, V, &prompts->back());
    if (p->type != Json::ARRAY || p->items.empty())
        return "'prompt' must be a string, an array of strings or of token ids, or an array of such arrays; got " +
               (p->type == Json::ARRAY ? std::string("an empty array") : got(*p));
    if (p->items[0].type == Json::NUMBER) return prompts->emplace_back(), ids_prompt(*p, V, &prompts->back());
    if (p->items.size() > (size_t)kMaxChoices)
        return "'prompt' may hold at most " + std::to_string(kMaxChoices) + " prompts, got " +
               std::to_string(p->items.size());
    for (const Json& item : p->items) {
        prompts->emplace_back();
        const std::string err = item.type == Json::STRING  ? text_prompt(item.str, tok, V, &prompts->back())
                                : item.type == Json::ARRAY ? ids_prompt(item, V, &prompts->back())
                                                           : "'prompt' items must all be strings or arrays of token "
                                                             "ids, got " + got(item);
        if (!err.empty()) return err;
    }
    return "";
}

// A chat's one prompt: <|endoftext|> (where the vocabulary has it: each training window starts with it), then
// each segment encoded on its own, as tokenize --instructions encodes them.
std::string read_messages(const Json& body, Tokenizer* tok, int V, std::vector<std::vector<int>>* prompts) {
    const Json* m = body.find("messages");
    if (!m) return "'messages' is required: an array of {\"role\", \"content\"}";
    std::vector<InstructionSegment> segments;
    std::string err;
    if (!chat_prompt_segments(*m, &segments, &err)) return "'messages': " + err;
    std::vector<int> ids;
    if (kTokenizerEot < V) ids.push_back(kTokenizerEot);
    for (const InstructionSegment& s : segments)
        for (int id : tokenizer_encode(tok, s.text)) ids.push_back(id);
    prompts->push_back(ids);
    return "";
}

std::string read_stop(const Json& body, std::vector<std::string>* stop) {
    const Json* s = body.find("stop");
    if (!s || s->type == Json::NUL) return "";
    std::vector<const Json*> items;
    if (s->type == Json::STRING) items.push_back(s);
    else if (s->type == Json::ARRAY)
        for (const Json& x : s->items) items.push_back(&x);
    else return "'stop' must be a string or an array of strings, got " + got(*s);
    if (items.size() > (size_t)kMaxStops)
        return "'stop' may hold at most " + std::to_string(kMaxStops) + " strings, got " + std::to_string(items.size());
    for (const Json* x : items) {
        if (x->type != Json::STRING || x->str.empty() || x->str.size() > kMaxStopBytes)
            return "'stop' strings must be non-empty strings of at most " + std::to_string(kMaxStopBytes) +
                   " bytes, got " + (x->type == Json::STRING ? std::to_string(x->str.size()) + " bytes" : got(*x));
        stop->push_back(x->str);
    }
    return "";
}

// The sampling fields and the ones read and ignored (penalties at 0, an empty logit_bias).
std::string read_sampling(const Json& body, CompletionRequest* r) {
    long long top_k = 0, n = 1, seed = 0;
    for (const std::string& err :
         {number_field(body, "temperature", 0, 2, &r->temperature), number_field(body, "top_p", 0, 1, &r->top_p),
          int_field(body, "top_k", 0, 1 << 20, &top_k), int_field(body, "n", 1, kMaxChoices, &n),
          int_field(body, "seed", INT64_MIN, INT64_MAX, &seed)})
        if (!err.empty()) return err;
    for (const char* key : {"presence_penalty", "frequency_penalty"})
        if (const Json* v = body.find(key); v && v->type != Json::NUL && !(v->type == Json::NUMBER && v->number == 0))
            return std::string("'") + key + "' is not supported: expected 0 or none, got " + got(*v);
    if (r->top_p <= 0) return "'top_p' must be above 0, got 0";
    const Json* bias = body.find("logit_bias");
    if (bias && bias->type != Json::NUL && !(bias->type == Json::OBJECT && bias->members.empty()))
        return "'logit_bias' is not supported: expected null or {}";
    r->top_k = (int)top_k, r->n = (int)n;
    r->has_seed = body.find("seed") && body.find("seed")->type != Json::NUL, r->seed = (uint64_t)seed;
    return read_stop(body, &r->stop);
}

// logprobs: an integer 0..5 for completions; for a chat, a boolean with top_logprobs 0..20 beside it.
std::string read_logprobs(const Json& body, CompletionRequest* r) {
    long long k = -1;
    if (!r->chat) {
        const std::string err = int_field(body, "logprobs", 0, 5, &k);
        return r->logprobs = (int)k, err;
    }
    bool on = false;
    if (std::string err = bool_field(body, "logprobs", &on); !err.empty()) return err;
    if (std::string err = int_field(body, "top_logprobs", 0, 20, &k); !err.empty()) return err;
    if (k >= 0 && !on) return "'top_logprobs' needs 'logprobs': true";
    r->logprobs = on ? (int)std::max(0LL, k) : -1;
    return "";
}

std::string read_length(const Json& body, int ctx, CompletionRequest* r) {
    size_t longest = 0;
    for (const auto& p : r->prompts) longest = std::max(longest, p.size());
    if ((int)longest > ctx)
        return std::string(r->chat ? "'messages'" : "'prompt'") + " is " + std::to_string(longest) +
               " tokens, more than the model's context of " + std::to_string(ctx);
    const int left = ctx - (int)longest;
    long long max_tokens = r->chat ? left : 16;
    const char* key = r->chat && body.find("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if (std::string err = int_field(body, key, 0, 1 << 30, &max_tokens); !err.empty()) return err;
    if (max_tokens > left)
        return std::string("'") + key + "' is " + std::to_string(max_tokens) + ", but the prompt has " +
               std::to_string(longest) + " tokens of the model's context of " + std::to_string(ctx) + ": at most " +
               std::to_string(left);
    const Json* given = body.find(key);
    if (max_tokens == 0 && r->chat && (!given || given->type == Json::NUL))  // the default: the context left
        return "'messages' is " + std::to_string(longest) +
               " tokens, the whole of the model's context: no room for a reply";
    if (max_tokens == 0 && !r->echo)
        return std::string("'") + key + "' must be at least 1" + (r->chat ? "" : " (0 only with 'echo')");
    r->max_tokens = (int)max_tokens;
    return "";
}

}  // namespace

std::string openai_read_request(const Json& body, bool chat, Tokenizer* tok, int ctx, int V, CompletionRequest* r) {
    *r = CompletionRequest();
    r->chat = chat;
    if (body.type != Json::OBJECT) return "the body must be a JSON object, got " + got(body);
    if (const Json* m = body.find("model"); m && m->type != Json::STRING && m->type != Json::NUL)
        return "'model' must be a string, got " + got(*m);
    const std::string prompt_err = chat ? read_messages(body, tok, V, &r->prompts) : read_prompts(body, tok, V, &r->prompts);
    if (!prompt_err.empty()) return prompt_err;
    for (const std::string& err : {read_sampling(body, r), bool_field(body, "stream", &r->stream),
                                   chat ? std::string() : bool_field(body, "echo", &r->echo), read_logprobs(body, r)})
        if (!err.empty()) return err;
    if ((int)r->prompts.size() * r->n > kMaxChoices)
        return "'n' times the prompts may be at most " + std::to_string(kMaxChoices) + ", got " +
               std::to_string(r->prompts.size() * r->n);
    if (const Json* o = body.find("stream_options"); o && o->type != Json::NUL) {
        if (!r->stream) return "'stream_options' needs 'stream': true";
        if (o->type != Json::OBJECT) return "'stream_options' must be an object, got " + got(*o);
        if (std::string err = bool_field(*o, "include_usage", &r->include_usage); !err.empty())
            return "'stream_options." + err.substr(1);
    }
    return read_length(body, ctx, r);
}

namespace {

// The length of the UTF-8 character at s[i], or 0 when the bytes there are not one (a stray continuation byte, a
// character cut short, an overlong form, a surrogate, a code point past U+10FFFF).
size_t utf8_length(const std::string& s, size_t i) {
    const unsigned char c = (unsigned char)s[i];
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool valid = n > 0 && i + n <= s.size();
    uint32_t cp = n == 1 ? c : n == 2 ? c & 31 : n == 3 ? c & 15 : c & 7;
    for (int k = 1; valid && k < n; k++) {
        valid = ((unsigned char)s[i + k] >> 6) == 2;
        cp = cp << 6 | ((unsigned char)s[i + k] & 63);
    }
    const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    valid = valid && cp >= least[n] && !(cp >= 0xD800 && cp <= 0xDFFF) && cp <= 0x10FFFF;
    return valid ? (size_t)n : 0;
}

}  // namespace

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = (unsigned char)s[i];
        const size_t n = utf8_length(s, i);
        if (n == 0) {
            out += "\\ufffd";
            i++;
            continue;
        }
        if (c == '"' || c == '\\') out += '\\', out += (char)c;
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            snprintf(buf, sizeof(buf), "\\u%04x", c);
            out += buf;
        } else out.append(s, i, n);
        i += n;
    }
    return out + "\"";
}

namespace {

std::string logprob_text(double x) { return std::isfinite(x) ? number_text(x) : "null"; }

// A token's text in logprobs, as JSON: the token when its bytes are UTF-8, else its bytes written out as OpenAI
// writes them (bytes:\xe2\x80), since U+FFFD for each would make several tokens one key of top_logprobs.
std::string token_json(const std::string& t) {
    for (size_t i = 0, n; i < t.size(); i += n)
        if ((n = utf8_length(t, i)) == 0) {
            std::string out = "bytes:";
            for (unsigned char c : t) {
                char buf[8];
                snprintf(buf, sizeof(buf), "\\x%02x", c);
                out += buf;
            }
            return json_string(out);
        }
    return json_string(t);
}

std::string bytes_array(const std::string& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); i++) out += (i ? "," : "") + std::to_string((unsigned char)s[i]);
    return out + "]";
}

// Completions' logprobs: {"tokens", "token_logprobs", "top_logprobs", "text_offset"}, tokens [first, last).
std::string completion_logprobs(const Choice& c, size_t first, size_t last) {
    std::string tokens, lps, tops, offsets;
    for (size_t i = first; i < last; i++) {
        const char* sep = i > first ? "," : "";
        tokens += sep + token_json(c.tokens[i]);
        lps += sep + logprob_text(c.token_logprobs[i]);
        offsets += sep + std::to_string(c.text_offset[i]);
        std::string top;
        for (const auto& [t, lp] : c.top_logprobs[i])
            top += (top.empty() ? "" : ",") + token_json(t) + ":" + logprob_text(lp);
        tops += sep + (std::isfinite(c.token_logprobs[i]) ? "{" + top + "}" : std::string("null"));
    }
    return "{\"tokens\":[" + tokens + "],\"token_logprobs\":[" + lps + "],\"top_logprobs\":[" + tops +
           "],\"text_offset\":[" + offsets + "]}";
}

// A chat's logprobs: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}, ...]}.
std::string chat_logprobs(const Choice& c, size_t first, size_t last) {
    std::string content;
    for (size_t i = first; i < last; i++) {
        std::string top;
        for (const auto& [t, lp] : c.top_logprobs[i])
            top += (top.empty() ? "" : ",") + std::string("{\"token\":") + token_json(t) +
                   ",\"logprob\":" + logprob_text(lp) + ",\"bytes\":" + bytes_array(t) + "}";
        content += (i > first ? "," : "") + std::string("{\"token\":") + token_json(c.tokens[i]) +
                   ",\"logprob\":" + logprob_text(c.token_logprobs[i]) + ",\"bytes\":" + bytes_array(c.tokens[i]) +
                   ",\"top_logprobs\":[" + top + "]}";
    }
    return "{\"content\":[" + content + "]}";
}

std::string logprobs_json(const CompletionRequest& r, const Choice* c) {
    if (r.logprobs < 0 || !c) return "null";
    return r.chat ? chat_logprobs(*c, 0, c->tokens.size()) : completion_logprobs(*c, 0, c->tokens.size());
}

std::string usage_json(const Usage& u) {
    return "{\"prompt_tokens\":" + std::to_string(u.prompt_tokens) + ",\"completion_tokens\":" +
           std::to_string(u.completion_tokens) + ",\"total_tokens\":" +
           std::to_string(u.prompt_tokens + u.completion_tokens) +
           (u.drafts ? ",\"completion_tokens_details\":{\"accepted_prediction_tokens\":" + std::to_string(u.accepted) +
                           ",\"rejected_prediction_tokens\":" + std::to_string(u.rejected) + "}"
                     : "") +
           "}";
}

std::string head(const CompletionRequest& r, const std::string& id, const std::string& model, int64_t created,
                 bool chunk) {
    const char* object = r.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
    return "{\"id\":" + json_string(id) + ",\"object\":\"" + object + "\",\"created\":" + std::to_string(created) +
           ",\"model\":" + json_string(model) + ",\"system_fingerprint\":null";
}

std::string reason_json(const std::string& finish_reason) {
    return finish_reason.empty() ? "null" : json_string(finish_reason);
}

}  // namespace

std::string openai_response(const CompletionRequest& r, const std::string& id, const std::string& model,
                            int64_t created, const std::vector<Choice>& choices, const Usage& usage) {
    std::string out = head(r, id, model, created, false) + ",\"choices\":[";
    for (size_t i = 0; i < choices.size(); i++) {
        const Choice& c = choices[i];
        out += (i ? ",{" : "{") + std::string("\"index\":") + std::to_string(i);
        if (r.chat) out += ",\"message\":{\"role\":\"assistant\",\"content\":" + json_string(c.text) + "}";
        else out += ",\"text\":" + json_string(c.text);
        out += ",\"logprobs\":" + logprobs_json(r, &c) + ",\"finish_reason\":" + reason_json(c.finish_reason) + "}";
    }
    return out + "],\"usage\":" + usage_json(usage) + "}";
}

std::string openai_chunk(const CompletionRequest& r, const std::string& id, const std::string& model, int64_t created,
                         int index, const std::string& text, const std::string& finish_reason, bool first,
                         const Choice* logprobs) {
    std::string out = head(r, id, model, created, true) + ",\"choices\":[{\"index\":" + std::to_string(index);
    if (r.chat) {
        std::string delta = first ? "\"role\":\"assistant\"" : "";
        if (!text.empty() || (first && finish_reason.empty())) delta += (delta.empty() ? "" : ",") + std::string("\"content\":") + json_string(text);
        out += ",\"delta\":{" + delta + "}";
    } else {
        out += ",\"text\":" + json_string(text);
    }
    return out + ",\"logprobs\":" + logprobs_json(r, logprobs) + ",\"finish_reason\":" + reason_json(finish_reason) +
           "}]}";
}

std::string openai_usage_chunk(const CompletionRequest& r, const std::string& id, const std::string& model,
                               int64_t created, const Usage& usage) {
    return head(r, id, model, created, true) + ",\"choices\":[],\"usage\":" + usage_json(usage) + "}";
}

std::string openai_models(const std::string& model, int64_t created) {
    return "{\"object\":\"list\",\"data\":[{\"id\":" + json_string(model) + ",\"object\":\"model\",\"created\":" +
           std::to_string(created) + ",\"owned_by\":\"gpt2.cpp\"}]}";
}

std::string openai_error(int status, const std::string& message, const std::string& param) {
    const char* type = status == 401                    ? "authentication_error"
                       : status == 403                  ? "permission_error"
                       : status == 404                  ? "not_found_error"
                       : status == 429 || status == 503 ? "server_overloaded"
                       : status >= 500                  ? "server_error"
                                                        : "invalid_request_error";
    return "{\"error\":{\"message\":" + json_string(message) + ",\"type\":\"" + type + "\",\"param\":" +
           (param.empty() ? std::string("null") : json_string(param)) + ",\"code\":null}}";
}
