/*
 * api_metrics: GET /metrics, the Prometheus text format (version 0.0.4):
 * this process' counters (metrics.h), the node's lease work (node.h), and
 * the catalog's gauges (jobs by state: the whole cluster's on a shared
 * catalog, so that any node's scrape tells the queue depth).
 */
#ifndef OOB_API_METRICS_H
#define OOB_API_METRICS_H

#include "api_routes.h"

int api_metrics_get(struct api_ctx *c, struct http_req *r, struct api_req *q);

#endif
