// token_files.h: how ./gpt2 reads llm.c token files (core/dataloader.h's format) beyond the core's plain
// read of one file: shards mapped read-only, fingerprinted for resume, named by comma-separated lists and
// globs, visited in a seeded order each epoch, and guarded against a file that changes under the run.
// token_files_plug_in puts these into the core's seams.
//
// --train, --val and eval --data take one token file, a comma-separated list, or a glob in quotes (so the shell
// leaves it to gpt2), e.g. the shards llm.c's fineweb.py writes. Each shard is mapped, never copied: the process
// holds the model, its optimizer and activations and at most 256 KiB of window order (core/dataloader.h), and the
// data stays in the page cache whatever the corpus or shard size. Training order follows llm.c's loader: each epoch a
// seeded permutation of the shards and, within each, of its windows of T+1 tokens, both from --seed (llm.c permutes
// whole batches of B*T contiguous tokens; we permute single windows, so a batch mixes windows from all over the
// shard). A step's windows come from one shard; the windows a shard has left when fewer than a step's remain are
// skipped for that epoch. --no-shuffle takes the shards and their windows in order. A single file trains exactly as
// the core's one-file loader does. eval --data scores each shard's consecutive windows in turn (report/evaluate.h).
#pragma once
#include <string>
#include <vector>

#include "core/dataloader.h"

// Maps `path` read-only (MAP_PRIVATE) and validates it as tokenfile_check does, every id included (one
// sequential pass at open, then the pages are dropped from this process: a bad id is reported before
// training rather than hours into it, and a shard costs address space and reclaimable file pages, not
// anonymous memory). Any defect is fatal naming the file. Sets the fingerprint. With token_files_masks, the
// loss mask beside it (formats/loss_mask.h) is mapped and checked too, when there is one (a defect or a
// mismatch is fatal naming the mask), and its fingerprint joins the shard's.
void tokenfile_map(TokenShard* shard, const std::string& path, int vocab_size);
// train and eval --loss-on: answer (true, the default) reads each shard's loss mask, all (false) ignores them.
extern bool token_files_masks;
// The loss mask of a shard tokenfile_map opened (num_tokens bytes, 1 = scored as a target), or null.
const uint8_t* token_files_mask(const TokenShard& shard);
// The -T a shard's loss mask was packed for (its header), or 0: unknown or no mask.
int token_files_mask_T(const TokenShard& shard);
// Every token of a shard tokenfile_map opened hashed whole as it was opened (16 hex digits), then with a loss
// mask "+" the tokens and every flag of the mask hashed (16 more); empty for a shard it did not open: what the
// fingerprint below misses, for resume.
std::string token_files_content(const TokenShard& shard);
// A cheap fingerprint of a shard for resume (16 hex digits): FNV-1a (platform/hash.h) over the token count,
// the header and the first and last MiB of tokens (all tokens when there are at most 2 MiB of them). It
// catches a shard added, removed, reordered, grown, shrunk or rewritten at either end; it misses an edit of
// the same length confined to the middle of a shard bigger than 2 MiB.
std::string tokenfile_fingerprint(const TokenShard& shard);
// The same of a token file of num_tokens tokens from its header (kTokenFileHeaderBytes) and the token bytes it
// reads, for a writer that does not hold the file: all of them in `first` when there are at most
// 2 * kTokenFileFingerprintEdge, else the first kTokenFileFingerprintEdge in `first` and the last in `last`.
const size_t kTokenFileFingerprintEdge = (size_t)1 << 20;
std::string tokenfile_fingerprint_edges(size_t num_tokens, const void* header, const void* first, const void* last);
// The files `spec` names: comma-separated paths or glob patterns (a pattern's matches sorted by name, as
// llm.c sorts them). fatal naming `flag` and the pattern when a pattern matches nothing.
std::vector<std::string> token_files_expand(const std::string& spec, const char* flag);
// The next shard of dl's epoch (llm.c's shuffle): each epoch a seeded permutation of the shards (with no
// shuffle, in order), drawn from the loader's RNG before the first shard's window order. One shard draws
// nothing, so a single file takes the windows the core's default (one file, no shards) takes.
void token_files_next_shard(DataLoader* dl);
// Reads a batch's windows (dataloader_copy) guarded: false naming the shard when its mapping shrank under
// the run (a SIGBUS, caught) or it now holds an id >= dl->vocab_size (rewritten in place since its check), or
// when its loss mask's file is no longer the size it was at open (cut within its last page: no SIGBUS there).
// A target the shard's loss mask says 0 for becomes -1, not scored (core/layers.h).
bool token_files_read(DataLoader* dl, const TokenShard& shard, const uint32_t* windows, std::string* err);
// Tokens over all of dl's shards.
size_t token_files_num_tokens(const DataLoader& dl);
// Targets scored of a batch's: those not -1 (a loss mask's prompts).
size_t token_files_scored(const std::vector<int>& targets);
// Of a shard's targets 1..n (token i as the target after token i - 1), those scored: its loss mask's ones, or all n
// without a mask.
size_t token_files_scored_targets(const TokenShard& shard, size_t n);
// Sets the core's seams to the above: tokenfile_open, dataloader_expand, dataloader_next_shard, dataloader_read.
void token_files_plug_in();
