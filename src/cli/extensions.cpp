// extensions.cpp: see extensions.h.
#include "cli/extensions.h"

#include "core/layout.h"
#include "core/layers.h"
#include "formats/safetensors_file.h"
#include "formats/token_files.h"
#include "inference/matvec.h"
#include "platform/util.h"
#include "tuned/gemm_tile.h"

void extensions_plug_in() {
    buffer_prefault = buffer_prefault_huge;
    gemm_tuned = gemm_packed;
    matmul_rows = matvec_rows;
    safetensors_plug_in();
    token_files_plug_in();
}
