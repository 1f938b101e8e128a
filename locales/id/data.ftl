# Data sebuah modul: barisnya, impor terakhirnya, ekspor.
nav-data = Data
data-index-title = Data
data-loop-help = Untuk mengubah baris yang sudah ada: ekspor, ubah berkasnya di spreadsheet, lalu unggah dengan mode upsert. Kolom _version setiap baris memberi tahu importgate baris mana yang berubah di tabel sejak diekspor; baris itu ditolak sebagai konflik, tidak ditimpa.
data-rules-link = Aturan
data-row-count = { $count ->
    [one] Tabel berisi satu baris.
   *[other] Tabel berisi { $count } baris.
}
data-export-title = Ekspor
data-format = Format
data-filters = Hanya baris dengan
data-filter-any = nilai apa saja
data-limit = Paling banyak sebanyak ini
data-export = Ekspor
data-imports-title = Impor terakhir
data-imports-none = Belum ada impor untuk modul ini.
