// token_files.h: how ./gpt2 reads llm.c token files (core/tokenfile.h's format) beyond the core's plain
// read: shards mapped read-only, fingerprinted for resume, named by comma-separated lists and globs, and
// guarded against a file that shrinks under the run. token_files_plug_in puts these into the core's seams.
#pragma once
#include <string>
#include <vector>

#include "core/tokenfile.h"

// Maps `path` read-only (MAP_PRIVATE) and validates it as tokenfile_check does, every id included (one
// sequential pass at open, then the pages are dropped from this process: a bad id is reported before
// training rather than hours into it, and a shard costs address space and reclaimable file pages, not
// anonymous memory). Any defect is fatal naming the file. Sets the fingerprint.
void tokenfile_map(TokenShard* shard, const std::string& path, int vocab_size);
// A cheap fingerprint of a shard for resume (16 hex digits): FNV-1a (platform/hash.h) over the token count,
// the header and the first and last MiB of tokens (all tokens when there are at most 2 MiB of them). It
// catches a shard added, removed, reordered, grown, shrunk or rewritten at either end; it misses an edit of
// the same length confined to the middle of a shard bigger than 2 MiB.
std::string tokenfile_fingerprint(const TokenShard& shard);
// The files `spec` names: comma-separated paths or glob patterns (a pattern's matches sorted by name, as
// llm.c sorts them). fatal naming `flag` and the pattern when a pattern matches nothing.
std::vector<std::string> token_files_expand(const std::string& spec, const char* flag);
// Sets the core's seams to the above: tokenfile_open, dataloader_expand, dataloader_guard (stop_guard_bus).
void token_files_plug_in();
