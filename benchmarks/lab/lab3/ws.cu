#define WS_NAME x_ws
#define WS_PRODUCERS 128
#define WS_SETMAXNREG 1
#define WS_WAIT_ALL 0
#include "ws_generic.cuh"
