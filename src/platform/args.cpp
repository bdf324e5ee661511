// args.cpp: see args.h.
#include "platform/args.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "platform/util.h"

int cli_edit_distance(const std::string& a, const std::string& b) {
    std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); j++) prev[j] = (int)j;
    for (size_t i = 1; i <= a.size(); i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= b.size(); j++) {
            int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            cur[j] = std::min(sub, std::min(prev[j] + 1, cur[j - 1] + 1));
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

void cli_print_help(const char* command, const char* usage, const char* about, const std::vector<CliFlag>& flags) {
    printf("usage: %s\n%s\n", usage, about);
    if (flags.empty()) return;
    printf("\nflags of %s:\n", command);
    for (const CliFlag& f : flags) {
        std::string left = std::string("  --") + f.name;
        if (f.short_name[0]) left = std::string("  -") + f.short_name + ", --" + f.name;
        if (!f.is_switch) left += " X";
        std::string def;
        if (f.is_switch) def = "";
        else if (f.default_value && !strstr(f.help, "(default"))  // a help line may state its default itself
            def = std::string(" (default: ") + (f.default_value[0] ? f.default_value : "none") + ")";
        printf("%-26s %s%s\n", left.c_str(), f.help, def.c_str());
    }
}

static const CliFlag* find_flag(const std::vector<CliFlag>& flags, const std::string& name, bool is_short) {
    for (const CliFlag& f : flags)
        if ((is_short ? std::string(f.short_name) : std::string(f.name)) == name) return &f;
    return nullptr;
}

CliArgs cli_parse(int argc, char** argv, const char* command, const char* usage, const char* about,
                  const std::vector<CliFlag>& flags, bool allow_positional) {
    CliArgs args;
    args.command = command;
    args.flags = flags;
    const char* took_value = nullptr;  // the flag whose value was the previous argument
    for (int i = 0; i < argc; i++) {
        std::string a = argv[i];
        if (a == "--help" || a == "-h") {
            cli_print_help(command, usage, about, flags);
            exit(0);
        }
        bool is_long = a.size() > 2 && a[0] == '-' && a[1] == '-';
        bool is_short = !is_long && a.size() >= 2 && a[0] == '-' && !(a[1] >= '0' && a[1] <= '9') && a[1] != '.';
        if (!is_long && !is_short) {
            if (!allow_positional && took_value)
                fatal_hint(std::string("if the shell expanded a glob given to --") + took_value + ", quote it: --" +
                               took_value + " 'data/*_train_*.bin'",
                           "unexpected argument '%s' (%s) after --%s %s: expected only flags", a.c_str(), command,
                           took_value, argv[i - 1]);
            if (!allow_positional)
                fatal("unexpected argument '%s' (%s): expected only flags; see `%s %s --help`", a.c_str(), command,
                      program_name().c_str(), command);
            args.positional.push_back(a);
            took_value = nullptr;
            continue;
        }
        std::string name = a.substr(is_long ? 2 : 1), value;
        bool has_value = false;
        size_t eq = name.find('=');
        if (eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
            has_value = true;
        }
        const CliFlag* f = find_flag(flags, name, !is_long);
        if (!f) {
            std::string best;  // the suggestion, as it would be typed
            const CliFlag* glued = is_short ? find_flag(flags, name.substr(0, 1), true) : nullptr;
            if (glued && !glued->is_switch) {  // -n5: the value written against the short name
                best = std::string("-") + glued->short_name + " " + name.substr(1);
            } else if (is_short &&
                       name.size() == 1) {  // one letter is near every short name: only its other case counts
                for (const CliFlag& g : flags)
                    if (g.short_name[0] && tolower((unsigned char)g.short_name[0]) == tolower((unsigned char)name[0]))
                        best = std::string("-") + g.short_name + " (--" + g.name + ")";
            } else {
                int best_d = 4;  // at most 3 edits away
                for (const CliFlag& g : flags) {
                    int d = cli_edit_distance(name, g.name);
                    if (d < best_d) best_d = d, best = std::string("--") + g.name;
                }
            }
            std::string shown = (is_long ? "--" : "-") + name;
            if (!best.empty())
                fatal_hint("did you mean " + best + "?", "unknown flag %s (%s): see `%s %s --help`", shown.c_str(),
                           command, program_name().c_str(), command);
            fatal("unknown flag %s (%s): see `%s %s --help`", shown.c_str(), command, program_name().c_str(), command);
        }
        if (f->is_switch) {
            if (has_value) fatal("flag --%s takes no value (%s)", f->name, command);
        } else if (!has_value) {
            if (i + 1 >= argc) fatal("missing value for flag --%s (%s): expected %s", f->name, command, f->help);
            value = argv[++i];
            // `--prompt --ids`: the next flag taken for a value would be lost without a word
            const std::string next = value.substr(0, value.find('='));
            if (next.size() > 2 && next.compare(0, 2, "--") == 0 && find_flag(flags, next.substr(2), false))
                fatal_hint(
                    "a value that starts with -- goes after an equals sign: --" + std::string(f->name) + "=" + value,
                    "missing value for flag --%s (%s): got the flag %s", f->name, command, next.c_str());
        }
        took_value = f->is_switch || has_value ? nullptr : f->name;
        args.names.push_back(f->name);
        args.values.push_back(value);
    }
    return args;
}

bool CliArgs::has(const char* name) const {
    for (const std::string& n : names)
        if (n == name) return true;
    return false;
}

bool CliArgs::on(const char* name) const { return has(name); }

std::string CliArgs::str(const char* name) const {
    for (size_t i = names.size(); i-- > 0;)
        if (names[i] == name) return values[i];
    const CliFlag* f = find_flag(flags, name, false);
    assert(f && "CliArgs::str of a flag the command does not declare");
    if (!f->default_value || !f->default_value[0])
        fatal("missing flag --%s (%s): expected %s", name, command.c_str(), f->help);
    return f->default_value;
}

long long CliArgs::integer_in(const char* name, long long lo, long long hi) const {
    std::string v = str(name);
    char* endp = nullptr;
    errno = 0;
    long long x = strtoll(v.c_str(), &endp, 10);
    if (v.empty() || isspace((unsigned char)v[0]) || *endp || (errno && errno != ERANGE))  // ' 5' as '5 ' is
        fatal("malformed value for --%s (%s): expected an integer, got '%s'", name, command.c_str(), v.c_str());
    if (errno == ERANGE || x < lo || x > hi)  // an integer past long long's range is out of range too
        fatal("bad value for --%s (%s): expected %lld..%lld, got %s", name, command.c_str(), lo, hi, v.c_str());
    return x;
}

double CliArgs::number_in(const char* name, double lo, double hi) const {
    std::string v = str(name);
    char* endp = nullptr;
    errno = 0;
    double x = strtod(v.c_str(), &endp);
    if (v.empty() || isspace((unsigned char)v[0]) || *endp || errno || !std::isfinite(x))
        fatal("malformed value for --%s (%s): expected a number, got '%s'", name, command.c_str(), v.c_str());
    if (x < lo || x > hi)
        fatal("bad value for --%s (%s): expected %g..%g, got %s", name, command.c_str(), lo, hi, v.c_str());
    return x;
}

CliArgs cli_merge_stored(const CliArgs& given, const std::vector<std::pair<std::string, std::string>>& stored,
                         const std::string& where) {
    CliArgs merged = given;
    merged.names.clear();
    merged.values.clear();
    for (const auto& kv : stored) {
        const CliFlag* f = find_flag(given.flags, kv.first, false);
        if (!f)
            fatal("bad train state (%s): unknown flag --%s for %s", where.c_str(), kv.first.c_str(),
                  given.command.c_str());
        if (f->is_switch && !kv.second.empty())
            fatal("bad train state (%s): flag --%s takes no value", where.c_str(), kv.first.c_str());
        merged.names.push_back(kv.first);
        merged.values.push_back(kv.second);
    }
    merged.names.insert(merged.names.end(), given.names.begin(), given.names.end());
    merged.values.insert(merged.values.end(), given.values.begin(), given.values.end());
    return merged;
}
