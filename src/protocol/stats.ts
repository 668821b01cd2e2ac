/** A running job's resources, as the supervisor measures them and the reports show them. */
export interface JobStats {
  /** Live processes of the job. */
  procs: number;
  /** Bytes in memory; null when nothing could be read. */
  memoryBytes: number | null;
  /** CPU time (user + system) in seconds; null when nothing could be read. */
  cpuSeconds: number | null;
  /** TCP ports the job's processes listen on, ascending, each once (whatever the family). */
  ports: number[];
}
