# Daftar pekerjaan dan halaman pekerjaan.
jobs-title = Pekerjaan
jobs-upload-a-file = Unggah berkas
jobs-filter-label = Saring pekerjaan
jobs-module = Modul
jobs-all-modules = Semua modul
jobs-state = Status
jobs-all-states = Semua status
jobs-only-mine = Hanya unggahan saya
jobs-filter = Saring
jobs-none-match = Tidak ada pekerjaan yang cocok.
jobs-upload-to-start = Unggah berkas untuk memulai.
jobs-caption = Pekerjaan, terbaru lebih dulu. Status diperbarui sendiri.
jobs-col-job = Pekerjaan
jobs-col-rows = Baris
jobs-col-errors = Kesalahan
jobs-col-file = Berkas
jobs-col-submitted-by = Diunggah oleh
jobs-col-created = Dibuat
jobs-older = Pekerjaan lebih lama →

job-done-approve = Disetujui. Layanan sedang menjalankan keputusan ini; halaman ini menampilkan hasilnya.
job-done-reject = Ditolak. Alasan Anda dicatat di linimasa.
job-done-cancel = Dibatalkan. Tidak ada yang akan ditulis.
job-done-rollback = Pengembalian impor diminta. Penyetuju lain harus menyetujuinya.
job-reload = Muat ulang halaman untuk melihatnya
job-title = Impor { $module } { $id }
job-parts = Bagian buku kerja
job-part-sheet = lembar { $sheet }
job-heading = Impor { $module }
job-breadcrumb = Jejak navigasi
job-meta-file = Berkas
job-meta-no-name = (tanpa nama)
job-meta-into = ke tabel
job-meta-mode = mode
job-meta-on-error = jika ada kesalahan
job-mode = { $mode ->
    [update] perbarui
    [upsert] sisipkan atau perbarui
   *[insert] sisipkan
}
job-on-error = { $on_error ->
    [skip] lewati baris
   *[fail] gagalkan
}
job-meta-submitted-by = diunggah oleh
job-simulated = Pekerjaan ini berjalan dalam simulasi: penulisan dan pengembaliannya dicatat, tetapi tidak menulis apa pun.
job-revision-of = Revisi dari
job-revised-as = Direvisi sebagai
job-purged = Baris yang disiapkan dan berkas yang disimpan untuk pekerjaan ini dihapus pada { $when } (masa simpan); pratinjaunya sudah tidak ada, linimasa dan daftar kesalahannya tetap ada.
job-progress-before = Sejauh ini{" "}
job-progress-after = {" "}baris sudah diperiksa.
job-working-validating = Berkas sedang diperiksa.
job-working-committing = Baris sedang ditulis.
job-working-undoing = Impor sedang dibatalkan.
job-counts = Jumlah

count-rows = Baris
count-valid = Valid
count-errors = Kesalahan
count-insert = Sisipkan
count-update = Perbarui
count-unchanged = Tidak berubah
count-warnings = Peringatan

col-row = Baris
col-key = Kunci
col-why = Alasan
problem-referring = Baris modul lain yang merujuk kunci yang akan dihapus oleh pengembalian ini
col-module = Modul
col-names = Merujuk
col-action = Tindakan
col-notes = Pesan baris

gate-commit-requested-by = Penulisan diminta oleh
gate-rollback-requested-by = Pengembalian impor diminta oleh
gate-by = oleh
gate-key-issued-by = kunci diterbitkan oleh
gate-decision = { $action ->
    [rollback] Pengembalian impor
   *[other] Penulisan
} { $decision ->
    [approved] disetujui
    [rejected] ditolak
    [cancelled] dibatalkan
   *[other] kedaluwarsa
}

move-simulated = Simulasi: ini dicatat, tidak ada yang ditulis.
move-approve = Setujui…
move-approve-explain = Setujui penulisan berkas ini ke { $table }: { $insert_text } baris baru, { $update_text } baris berubah, { $unchanged_text } tidak berubah
move-approve-errors = , { $errors_text } baris dengan kesalahan tidak disertakan
move-approve-warnings = , { $warnings_text } baris dengan peringatan (lihat tab Peringatan)
move-approve-end = . Semuanya ditulis dalam satu transaksi, persis seperti pratinjau.
move-approve-confirm = Setujui dan tulis
move-approve-rollback = Setujui pengembalian…
move-approve-rollback-explain = Setujui pengembalian impor ini di { $table }: baris yang disisipkan dihapus, baris yang diperbarui mendapat kembali nilai sebelumnya.
move-approve-rollback-confirm = Setujui pengembalian
move-reject = Tolak…
move-reject-explain = Tolak impor ini. Tidak ada yang ditulis; pengunggah melihat alasan Anda.
move-reject-confirm = Tolak impor
move-reject-rollback = Tolak pengembalian…
move-reject-rollback-explain = Biarkan impor apa adanya dan tutup permintaan pengembalian.
move-reject-rollback-confirm = Tolak pengembalian
move-cancel = Batalkan…
move-cancel-explain = Tarik impor ini sebelum ada yang memutuskan. Tidak ada yang ditulis.
move-cancel-confirm = Batalkan impor
move-rollback = Minta pengembalian impor…
move-rollback-explain = Minta agar impor ini dikembalikan. Penyetuju lain harus menyetujui pengembaliannya.
move-rollback-confirm = Minta pengembalian impor

actions-title = Keputusan Anda
actions-four-eyes = Anda yang meminta langkah ini, jadi penyetuju lain yang memutuskannya (aturan empat mata).
actions-rollback-closed = Batas waktu pengembalian impor ini berakhir pada { $when }; impor ini tidak bisa dikembalikan lagi.
actions-approver-needed = Seorang penyetuju yang memutuskan langkah ini.
actions-comment-required = Komentar (wajib: jelaskan alasannya)
actions-comment-optional = Komentar (opsional)

tab-all = Semua
preview-title = Pratinjau
preview-tabs = Baris menurut tindakan
preview-wait = Pratinjau muncul setelah berkas selesai diperiksa.
preview-unreadable = Berkas tidak dapat dibaca, jadi tidak ada yang bisa dipratinjau.
preview-no-rows = Tidak ada baris di sini.
preview-revised = Pekerjaan ini sudah direvisi; barisnya ditampilkan di revisinya.
preview-purged = Baris yang disiapkan sudah dihapus; tidak ada yang bisa dipratinjau.
preview-rows = Baris pratinjau
preview-pages = Halaman pratinjau
preview-range = Baris { $first }–{ $last } dari { $total }
preview-was = sebelumnya
preview-becomes = menjadi
pager-first = « Pertama
pager-previous = ‹ Sebelumnya
pager-next = Berikutnya ›
pager-last = Terakhir »

action-insert = sisipkan
action-update = perbarui
action-unchanged = tidak berubah
action-error = kesalahan
action-excluded = dikecualikan

event-upload = Diunggah
event-checked = Diperiksa: siap disetujui
event-file_failure = Berkas ditolak
event-row_errors = Ada baris dengan kesalahan
event-approve = Disetujui
event-reject = Ditolak
event-cancel = Dibatalkan
event-expire = Kedaluwarsa tanpa keputusan
event-written = Ditulis
event-commit_failed = Penulisan ditolak
event-rollback = Pengembalian impor diminta
event-undone = Dikembalikan
event-rollback_conflict = Pengembalian ditolak: baris sudah berubah
event-gave_up = Dihentikan: pekerjaan terus gagal
event-interrupted = Terputus: diambil kembali setelah layanan dimulai ulang
event-purged = Dihapus: baris yang disiapkan dan berkas yang disimpan dihapus
event-other = Peristiwa
timeline-title = Linimasa
timeline-the-service = layanan
timeline-to = menjadi

# Kesalahan dan peringatan baris.
note-required = { $column } wajib diisi
note-type = { $value } bukan { $kind }
note-format = format { $value } tidak dikenali sebagai { $kind }
note-format-date = { $value } bukan tanggal ({ $formats })
note-out-of-range = { $value } di luar rentang yang diizinkan untuk { $column }
note-not-allowed = { $value } bukan salah satu dari: { $allowed }
note-too-long-max = { $column } terlalu panjang: paling banyak { $max_text } karakter
note-too-long = { $column } terlalu panjang
note-duplicate = kunci ({ $key }) muncul lebih dari sekali dalam berkas ini
note-exists = kunci ({ $key }) sudah ada di { $table }
note-not-found = kunci ({ $key }) tidak ada di { $table }
note-reference = { $column } { $value } tidak ada di { $module }
note-phone = { $value } bukan nomor telepon
note-conflict = baris berkunci ({ $key }) diubah, dihapus, atau ditambahkan di { $table } sejak diekspor
type-text = teks
type-integer = bilangan bulat
type-numeric = angka desimal
type-boolean = ya atau tidak
type-date = tanggal
type-timestamp = tanggal dan waktu
warning-unknown-columns = Kolom yang tidak ada di modul diabaikan: { $columns }
warning-references = { $rows ->
    [0] Setiap nilai { $columns } ada di { $module }
   *[other] { $rows_text } baris menyebut nilai { $columns } yang tidak ada di { $module }
}
warning-orphans = { $rows_text } baris { $module } merujuk baris yang dihapus oleh pengembalian ini
warning-sheet-ignored = lembar { $sheet } dilewati: namanya bukan nama modul
warning-mapping-applied = pemetaan tersimpan { $mapping } diterapkan pada judul kolom berkas; unggah dengan ?mapping=none untuk membacanya apa adanya

job-problem-unreadable = Berkas tidak dapat dibaca
job-problem-unreadable-detail = Berkas tidak dalam format yang dibaca importgate, atau melampaui batasnya.
job-problem-encoding = Teks tidak dalam pengodean yang diharapkan
job-problem-encoding-detail = Ada bita yang bukan teks dalam pengodean berkas; simpan sebagai UTF-8 lalu unggah lagi.
job-problem-no_rows = Berkas tidak berisi baris
job-problem-no_rows-detail = Berkas punya baris judul tetapi tidak ada baris data.
job-problem-missing_columns = Kolom wajib tidak ada
job-problem-missing_columns-detail = Kolom wajib modul tidak ada di baris judul berkas.
job-problem-duplicate_columns = Ada kolom yang disebut dua kali
job-problem-duplicate_columns-detail = Baris judul menyebut satu kolom dua kali.
job-problem-unknown_columns = Kolom di luar modul
job-problem-unknown_columns-detail = Berkas punya kolom yang tidak dikenal modul, dan unggahan meminta agar kolom itu ditolak.
job-problem-unknown_sheet = Lembar tidak ada di buku kerja
job-problem-unknown_sheet-detail = Lembar yang disebut unggahan tidak ada di buku kerja.
job-problem-no_parts = Tidak ada lembar yang memuat modul
job-problem-no_parts-detail = Tidak ada lembar buku kerja yang dinamai menurut modul atau dipetakan ke modul.
job-problem-too_many_rows = Terlalu banyak baris
job-problem-too_many_rows-detail = Berkas punya lebih banyak baris daripada batasnya.
job-problem-too_many_columns = Terlalu banyak kolom
job-problem-too_many_columns-detail = Berkas punya lebih banyak kolom daripada batasnya.
job-problem-row_errors = Ada baris dengan kesalahan
job-problem-row_errors-detail = Beberapa baris berisi kesalahan dan unggahan meminta berhenti bila ada kesalahan.
job-problem-stale_preview = Baris berubah setelah pratinjau
job-problem-stale_preview-detail = Baris di tabel berubah setelah pratinjau; tidak ada yang ditulis.
job-problem-stale_rules = Aturan modul berubah setelah pratinjau
job-problem-stale_rules-detail = Aturan modul berubah setelah pratinjau; tidak ada yang ditulis. Revisi tugas ini untuk memeriksanya lagi dengan aturan yang berlaku.
job-problem-database_error = Basis data menolak penulisan
job-problem-database_error-detail = Basis data menolak baris-barisnya; tidak ada yang ditulis.
job-problem-rollback_conflict = Baris berubah sejak ditulis
job-problem-rollback_conflict-detail = Baris yang ditulis impor ini sudah berubah; tidak ada yang dibatalkan.
job-problem-work_failed = Pekerjaan terus gagal
job-problem-work_failed-detail = Layanan mencoba beberapa kali dan gagal dengan cara yang sama setiap kali.
job-problem-no_space = Ruang disk basis data habis
job-problem-no_space-detail = Layanan mencoba beberapa kali, menunggu makin lama setiap kali, dan disk basis data selalu penuh. Tidak ada bagian pekerjaan ini yang disimpan; unggah berkas lagi setelah administrator mengosongkan ruang.

count-excluded = Dikeluarkan
preview-fixed-was = di berkas
event-revised = Direvisi: revisi menggantikannya
revision-heading = Revisi { $number } dari
revision-mapping = Pemetaan yang berlaku
revision-mapping-none = Judul kolom berkas apa adanya: tidak ada yang dipetakan manual.
revision-goes-to = menjadi
revision-ignored = diabaikan
revision-fixes = { $n_text } sel diperbaiki
revision-cell = Baris { $row }
revision-was-unread = (belum dibaca)
revision-more = … dan { $n_text } lagi, masing-masing ditandai di pratinjau.
revision-excluded = { $n_text } baris dikeluarkan
revision-excluded-rows = Nomor baris:
revision-excluded-see = lihat di pratinjau
revision-revisers = Revisi sebelumnya oleh
jobs-rules-waiting = { $count_text } usulan aturan menunggu keputusan.
jobs-rules-waiting-link = Lihat usulan
# Sel yang dinormalkan aturan modul, dan versi aturan saat job divalidasi.
tab-normalized = Hanya baris yang dinormalkan
count-normalized = Dinormalkan
preview-normalized-was = dinormalkan dari
note-with-rule = { $note } (aturan { $rule })
job-meta-rules-version = Versi aturan { $version }
jobs-revision-of = revisi { $number } dari
