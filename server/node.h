/*
 * node: one oobprofd among several on a shared catalog (DESIGN.md 6).
 *
 * A thread that feeds the local job pool from the shared queue and keeps
 * the node's leases alive:
 *   - whenever the pool has an idle worker and nothing waiting, it claims
 *     the oldest unheld queued job (catalog_job_claim) and submits it, so
 *     that jobs spread over the nodes as their workers free up;
 *   - every third of the lease it renews the leases of the jobs it holds
 *     and reaps the jobs of nodes that stopped renewing (catalog_job_reap:
 *     they are queued again for whichever node claims them next).
 * It also relays cancels: a DELETE at another node flags a job this node
 * holds (catalog_job_request_cancel), and this node cancels it in its pool.
 * node_kick wakes it at once (a job was just added here); otherwise it
 * looks every 250 ms, which bounds how long a job added on another node
 * waits for an idle worker here.
 *
 * Thread-safety: node_kick and node_stats from any thread; node_stop once.
 */
#ifndef OOB_NODE_H
#define OOB_NODE_H

#include <stdint.h>

#include "catalog.h"
#include "job.h"
#include "util/oob_err.h"

struct node;

struct node_stats {
	uint64_t claims;   /* jobs claimed from the shared queue */
	uint64_t renewals; /* lease renewals (one per held job per round) */
	uint64_t reaped;   /* other nodes' jobs found with a lapsed lease */
};

/* Starts the thread over cat (whose node id is set) and pool. */
struct node *node_start(struct catalog *cat, struct job_pool *pool, unsigned lease_s,
			struct oob_err *err);
void node_kick(struct node *n);
void node_stats(struct node *n, struct node_stats *out);
/* Stops claiming and joins the thread; node_kick stays harmless until
 * node_free. NULL is fine. Call before job_pool_free (whose jobs may still
 * kick), then node_free; catalog_job_release gives back what the pool did
 * not start. */
void node_stop(struct node *n);
void node_free(struct node *n);

#endif
