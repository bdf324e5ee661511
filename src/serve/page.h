// page.h: the chat page GET / answers with (page.html, built in).
#pragma once

extern const char* const kServePage;
