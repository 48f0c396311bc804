#define WS_NAME x_ws
#define WS_PRODUCERS 128
#define WS_SETMAXNREG 1
#include "ws_generic.cuh"
