/**
 * Usage logs and summaries, always scoped to one account: the list
 * (offset or keyset pages), summaries read from rollups, the streamed export,
 * and the monthly partitions of `usage_logs` (docs/usage.md).
 */
export { listUsage, type UsageFilter } from "./list.ts";
export { summarize } from "./summary.ts";
export { exportUsage, EXPORT_FORMATS, type ExportFormat } from "./export.ts";
export { UsagePartitions, buildRollups, type PartitionReport } from "./partitions.ts";
export { toUsageEntry, type GroupBy, type SummaryGroup, type UsageEntry, type UsageSummary } from "./entries.ts";
