#define WS_NAME x_ws_nomax
#define WS_PRODUCERS 128
#define WS_SETMAXNREG 0
#define WS_WAIT_ALL 0
#include "ws_generic.cuh"
