// Every loss: include this one header.
#pragma once
#include "losses/loss.h"
#include "losses/infonce.h"
#include "losses/infonce_symmetric.h"
#include "losses/ntxent.h"
#include "losses/multi_positive.h"
#include "losses/rank_infonce.h"
#include "losses/hard_negative_infonce.h"
#include "losses/triplet.h"
#include "losses/listwise.h"
#include "losses/contrastive.h"
#include "losses/smooth_l1.h"
