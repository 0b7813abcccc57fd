export * from 'htm/preact'
