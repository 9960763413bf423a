-- The total size of the recorded checkpoints, kept by a trigger on
-- checkpoint_records, so that CODEXEC_CHECKPOINT_MAX_TOTAL is checked
-- across replicas against one row (locked from a record's write to its
-- commit) instead of a sum over every record.
CREATE TABLE checkpoint_total (
  one   boolean PRIMARY KEY DEFAULT true CHECK (one),
  bytes bigint NOT NULL
);
INSERT INTO checkpoint_total (bytes) SELECT coalesce(sum((rec->>'bytes')::bigint), 0) FROM checkpoint_records;
CREATE FUNCTION checkpoint_total_keep() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE checkpoint_total SET bytes = bytes
    + CASE WHEN TG_OP IN ('INSERT', 'UPDATE') THEN coalesce((NEW.rec->>'bytes')::bigint, 0) ELSE 0 END
    - CASE WHEN TG_OP IN ('UPDATE', 'DELETE') THEN coalesce((OLD.rec->>'bytes')::bigint, 0) ELSE 0 END;
  RETURN NULL;
END
$$;
CREATE TRIGGER checkpoint_total_keep AFTER INSERT OR UPDATE OR DELETE ON checkpoint_records
  FOR EACH ROW EXECUTE FUNCTION checkpoint_total_keep();
