// I1 properties (spec/properties.md): invariance under chunking, scratch and earlier work.
#include "tests/properties/prop_support.hpp"

AKV_PROPERTY_SUITE(I1_PropInvariance);
AKV_PROPERTY(I1_PropInvariance, Chunkings)
AKV_PROPERTY(I1_PropInvariance, PoisonedScratch)
AKV_PROPERTY(I1_PropInvariance, DecodePaths)
AKV_PROPERTY(I1_PropInvariance, EarlierWork)

AKV_PROPERTY_SUITE(I1_PropRegression);
AKV_PROPERTY(I1_PropRegression, DecodeStepEqualsBatch)
AKV_PROPERTY(I1_PropRegression, ChunksOf64EqualOneChunk)
