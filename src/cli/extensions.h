// extensions.h: ./gpt2's versions of what the core leaves to a seam, plugged in once at the start: by main(),
// and by the test and benchmark programs, so that they run what ./gpt2 runs. gpt2-core plugs in nothing.
#pragma once

// Sets every hook the core offers: huge pages for its buffers (core/layout.h), the tuned gemm (core/gemm.h,
// tuned/gemm_tile.h), decoding's mat-vecs over a weight's bf16 or q8 copy (core/layers.h), bounded whole-file
// reads (core/error.h), safetensors' F16, BF16, F64 and I32 tensors (core/safetensors.h), mapped shards, globs,
// the shard order and guarded reads for token files (core/dataloader.h).
void extensions_plug_in();
