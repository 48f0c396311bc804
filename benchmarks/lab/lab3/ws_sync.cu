#define WS_NAME x_ws_sync
#define WS_PRODUCERS 128
#define WS_SETMAXNREG 1
#define WS_WAIT_ALL 1
#include "ws_generic.cuh"
