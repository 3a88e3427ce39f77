/*
 * The CUDA backend's plugin interface: what lib/nn/nn_cuda.cu, built into
 * librv-cuda.so, exports, and what lib/nn/nn_cuda_load.c looks up with
 * dlsym.  The plugin calls back into the program that loads it (rv_seterr,
 * rv_net_init, ...; the program exports its rv_* functions), so both must
 * come from the same build: the loader passes RV_CUDA_PLUGIN_ABI and the
 * plugin refuses another.
 */
#ifndef RV_NN_CUDA_PLUGIN_H
#define RV_NN_CUDA_PLUGIN_H

#include "nn/nn.h"

/* The plugin's file name, in <prefix>/lib/rv/ (Makefile: PLUGIN_NAME). */
#define RV_CUDA_PLUGIN_NAME "librv-cuda.so"

/*
 * Bump when a struct the two sides share (nn.h: rv_nn_ops, rv_nn_config,
 * rv_net, rv_layer, rv_nn_batch, rv_nn_hyper, rv_nn_out), a function of
 * librv the plugin calls, or one below changes.
 */
#define RV_CUDA_PLUGIN_ABI 2

#ifdef __cplusplus
extern "C" {
#endif

/* The backend's operations, or NULL when abi is not RV_CUDA_PLUGIN_ABI.
 * Cheap: creates no CUDA context. */
const struct rv_nn_ops *rv_cuda_plugin_ops(int abi);
/* cudaGetDeviceCount's count, 0 when it fails (no driver or device). */
int rv_cuda_plugin_devices(void);

#ifdef __cplusplus
}
#endif

#endif
