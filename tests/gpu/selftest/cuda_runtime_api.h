/*
 * cuda_runtime_api.h (self-test stand-in) - the part of the CUDA runtime API that
 * tests/gpu/test_cuda.c uses, on host memory, so that the test harness itself can
 * run where there is no GPU (CI). See fake_cuda.c.
 *
 * Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef MOEROUTE_SELFTEST_CUDA_RUNTIME_API_H
#define MOEROUTE_SELFTEST_CUDA_RUNTIME_API_H

#include <stddef.h>

typedef enum cudaError { cudaSuccess = 0, cudaErrorInvalidValue = 1 } cudaError_t;
typedef struct fake_stream* cudaStream_t;
typedef struct fake_graph* cudaGraph_t;
typedef struct fake_graph* cudaGraphExec_t;
typedef struct fake_node* cudaGraphNode_t;
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };
enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal = 0 };
#define cudaStreamNonBlocking 1
#define cudaStreamPerThread ((cudaStream_t)0x2)
struct cudaDeviceProp {
  char name[256];
  int major, minor, multiProcessorCount;
};

const char* cudaGetErrorName(cudaError_t e);
const char* cudaGetErrorString(cudaError_t e);
cudaError_t cudaMalloc(void** p, size_t n);
cudaError_t cudaFree(void* p);
cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t s);
cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, enum cudaMemcpyKind k, cudaStream_t st);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaPeekAtLastError(void);
cudaError_t cudaGetLastError(void);
cudaError_t cudaGetDeviceCount(int* n);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* p, int d);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned f);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode m);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* g);
cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t* nodes, size_t* n);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* e, cudaGraph_t g, unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e);
cudaError_t cudaGraphDestroy(cudaGraph_t g);

#endif /* MOEROUTE_SELFTEST_CUDA_RUNTIME_API_H */
