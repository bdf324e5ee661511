// page.cpp: the chat page (page.html) as a string in the binary: the build wraps the file in a raw string
// literal ($(BUILD)/gen/serve_page.inc, the Makefile's rule), so the page is edited as the HTML it is.
#include "serve/page.h"

const char* const kServePage =
#include "serve_page.inc"
    ;
