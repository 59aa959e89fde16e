// Everything the CUDA backend offers (link the dlbridge_cuda library).
#pragma once

#include "dlbridge/cuda/arrays.hpp"
#include "dlbridge/cuda/copy.hpp"
#include "dlbridge/cuda/error.hpp"
#include "dlbridge/cuda/memory.hpp"
#include "dlbridge/cuda/runtime.hpp"
#include "dlbridge/cuda/stream.hpp"
