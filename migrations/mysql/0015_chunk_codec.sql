-- How each stored chunk is encoded (`blobs::Packed`): 0 as it
-- came (every chunk stored before), 1 a zstd frame.
ALTER TABLE ig_blob_chunks ADD COLUMN codec BIGINT NOT NULL DEFAULT 0;
