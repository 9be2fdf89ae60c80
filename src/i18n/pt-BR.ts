/**
 * Frases em português do Brasil, com as mesmas chaves de ./en.ts (o tipo exige todas). `{nome}` é um valor a
 * inserir; os valores citados da entrada já chegam entre aspas. Códigos e status não se traduzem: os ERPs os leem.
 */
import type { Catalogue } from './index.js';

type P = Readonly<Record<string, string | undefined>>;
const paren = (v: string | undefined) => (v ? ` (${v})` : '');
const plural = (n: string | undefined, one: string, many: string) => `${n} ${n === '1' ? one : many}`;

export const PT_BR: Catalogue = {
  REQUIRED: (p: P) => `Esperava um valor${paren(p.when)}, veio uma célula vazia`,
  NOT_ALLOWED: 'Esperava uma célula vazia ({why}), veio {got}',
  INVALID_TEXT: 'Esperava texto sem caracteres de controle (tabulações, quebras de linha), veio {got}',
  'INVALID_TEXT.min': 'Esperava ao menos {min} caracteres, veio {got}',
  PATTERN: 'Esperava {expected}, veio {got}',
  TOO_LONG: 'Esperava no máximo {max} caracteres, veio {got}',
  INVALID_ENUM: 'Esperava um destes: {values}; veio {got}',
  INVALID_GUID: 'Esperava um GUID como 3f2504e0-4f89-41d3-9a0c-0305e82c3301, veio {got}',
  AMOUNT_NOT_POSITIVE: 'Esperava um valor maior que zero, veio {got}',
  'AMOUNT_NOT_POSITIVE.discount': 'Esperava um desconto maior que zero, veio {got}',
  AMOUNT_TOO_LARGE: (p: P) => `Esperava um valor de no máximo ${p.max}${paren(p.why)}, veio ${p.got}`,
  DATE_OUT_OF_RANGE: 'Esperava {what}, de {from} a {to}; veio {got}',
  INVALID_NUMBER: 'Esperava um número inteiro de {min} a {max}, veio {got}',
  INVALID_BOOLEAN: 'Esperava sim ou não (true/false), veio {got}',
  INVALID_STATE: 'Esperava a sigla de um estado (UF) com duas letras, como SP ou RJ, veio {got}',
  INVALID_ZIP_CODE: 'Esperava um CEP de 8 dígitos como 01310-100, veio {got}',
  'INVALID_ZIP_CODE.leadingZeros':
    'Esperava um CEP de 8 dígitos, veio {got} ({length} dígitos): o Excel apaga os zeros à esquerda; formate a coluna como Texto e digite {padded}',
  INVALID_EMAIL: 'Esperava um e-mail como ana@exemplo.com.br, veio {got}',
  INVALID_PHONE: 'Esperava um telefone com DDD como (11) 98765-4321 ou (11) 3333-4444, veio {got}',
  CONFLICT: 'Esperava só uma de duas colunas preenchida, vieram as duas',
  'CONFLICT.phone': 'Esperava o telefone em payer.phone ou em payer.phone.number, vieram os dois',
  NOTHING_TO_CHANGE: 'Esperava ao menos um valor a alterar além do correlationId, não veio nenhum',
  COLUMN_COUNT: 'Esperava {expected} células, como no cabeçalho, vieram {got}',
  INVALID_ROW: 'Esperava uma linha válida, veio uma que não pôde ser lida',
  ROW_INVALID: 'A linha não pôde ser lida: {reason}',
  INVALID_DOCUMENT: 'Esperava um CPF (11 dígitos) ou um CNPJ (14 caracteres), vieram {length} caracteres',
  'INVALID_DOCUMENT.empty': 'Esperava um CPF (11 dígitos) ou um CNPJ (14 caracteres), veio um valor vazio',
  'INVALID_DOCUMENT.characters': 'Esperava só dígitos (e letras num CNPJ), veio {char}',
  'INVALID_DOCUMENT.cpfLetters': 'Esperava um CPF de 11 dígitos, vieram letras',
  'INVALID_DOCUMENT.cnpjLastDigits': 'Esperava que os 2 últimos caracteres do CNPJ fossem dígitos',
  'INVALID_DOCUMENT.onlyCpf': 'Esperava um CPF (11 dígitos), vieram {length} caracteres',
  'INVALID_DOCUMENT.onlyCnpj': 'Esperava um CNPJ (14 caracteres), vieram {length} caracteres',
  'INVALID_DOCUMENT.leadingZeros':
    'Esperava um {what} de {expected} dígitos, vieram {length} dígitos: o Excel apaga os zeros à esquerda; formate a coluna como Texto e digite o documento com os zeros ({padded})',
  INVALID_CPF: 'Esperava um CPF com dígitos verificadores válidos, os dígitos verificadores não conferem',
  INVALID_CNPJ: 'Esperava um CNPJ com dígitos verificadores válidos, os dígitos verificadores não conferem',

  INVALID_LENGTH: 'Tamanho inválido: {detail}',
  INVALID_CHARACTERS: 'Caracteres inválidos: {detail}',
  INVALID_CHECK_DIGIT: 'Dígito verificador inválido: {detail}',
  INVALID_CRC: 'CRC do BR Code inválido: {detail}',
  INVALID_FIELD: 'Campo inválido: {detail}',
  MISSING_FIELD: 'Campo ausente: {detail}',
  UNKNOWN_FORMAT: 'Formato desconhecido: {detail}',
  DUE_DATE_OUT_OF_RANGE: 'Vencimento fora do intervalo: {detail}',
  INVALID_DATE: 'Esperava uma data como dd/mm/aaaa ou aaaa-mm-dd, veio {got}',
  'INVALID_DATE.calendar': 'Esperava uma data que exista no calendário, veio {got}',
  'INVALID_DATE.iso': 'Esperava uma data como aaaa-mm-dd, veio {got}',
  'INVALID_DATE.time': 'Esperava um horário HH:mm entre 00:00 e 23:59, veio {got}',
  INVALID_AMOUNT: 'Valor inválido: {detail}',
  'INVALID_AMOUNT.empty': 'Esperava um valor como 1.234,56, veio um valor vazio',
  'INVALID_AMOUNT.sign': 'Esperava um valor sem sinal, veio {got}',
  'INVALID_AMOUNT.characters': 'Esperava só dígitos, ponto e vírgula, veio {char} em {got}',
  'INVALID_AMOUNT.edges': 'Esperava um valor que comece e termine com um dígito, veio {got}',
  'INVALID_AMOUNT.marks': 'Esperava um único separador decimal "{mark}", vieram mais em {got}',
  'INVALID_AMOUNT.markCount': 'Esperava um único separador decimal "{mark}", vieram {count} em {got}',
  'INVALID_AMOUNT.decimals': 'Esperava no máximo 2 casas decimais, vieram {count} em {got}',
  'INVALID_AMOUNT.grouping': 'Esperava os milhares agrupados de três em três com "{group}", veio {got}',
  'INVALID_AMOUNT.tooLarge': 'Esperava um valor abaixo de 10.000.000.000, veio {got}',
  AMBIGUOUS_AMOUNT:
    'Valor ambíguo {got}: "{mark}" seguido de 3 dígitos pode ser milhar ou decimal; escreva {whole} ou {decimal}',
  WITH_HINT: '{message} ({hint})',
  'HINT.decimalComma': 'use vírgula: 1.234,56',
  'HINT.decimalDot': 'use ponto: 1234.56',
  'INVALID_CHARACTERS.bill':
    'Esperava um código de barras ou linha digitável só com dígitos (espaços, pontos e hífens aceitos), veio {char} na posição {position}',
  'INVALID_LENGTH.bill':
    'Esperava um código de barras de 44 dígitos, uma linha digitável de boleto de 47 ou de conta/tributo de 48, vieram {count} dígitos',
  'INVALID_LENGTH.barCodeGotLine':
    'Esperava um código de barras de 44 dígitos, veio uma linha digitável de {count} dígitos (ponha-a em digitableLine)',
  'INVALID_LENGTH.lineGotBarCode':
    'Esperava uma linha digitável de 47 ou 48 dígitos, veio um código de barras de 44 dígitos (ponha-o em barCode)',
  'INVALID_FIELD.taxLength': 'Esperava que a linha de conta/tributo (começa com 8) tivesse 48 dígitos, vieram {count}',
  'INVALID_FIELD.taxStart':
    'Esperava que uma linha de 48 dígitos fosse de conta/tributo, começando com 8, veio {first}',

  'WHEN.slip': 'quando o tipo é BANKSLIP ou BANKSLIP_PIX',
  'WHEN.with': 'junto com {column}',
  'WHEN.typeIs': 'quando o tipo é {type}',
  'WHEN.anyFilled': 'quando alguma coluna {prefix} está preenchida',
  'WHEN.anyDiscountItem': 'quando algum item de desconto está preenchido',
  'WHEN.filled': 'quando {column} está preenchido',
  'WHY.pixOnly': 'só para cobranças Pix',
  'WHY.slipOnly': 'só para boletos',
  'WHY.notPixStatic': 'não vale para PIX_STATIC',
  'WHY.bankslipPixOurNumber': 'um BANKSLIP_PIX é emitido na carteira 112: o banco atribui o nosso número',
  'WHY.slipMax': 'o máximo que um boleto comporta',
  'WHAT.dueDate': 'um vencimento de hoje a 10 anos à frente (o banco recusa outros)',
  'EXPECT.correlationId': '1 a 100 letras, dígitos ou . _ ~ : - (vai em caminhos de URL)',
  'EXPECT.ourNumber': '1 a 11 dígitos (cobrança expressa)',
  'EXPECT.areaCode': 'um DDD de 2 dígitos (11 a 99, sem terminar em 0)',
  'EXPECT.phoneNumber': 'um telefone de 8 dígitos (fixo, começando de 2 a 5) ou 9 dígitos (celular, começando com 9)',
  'EXPECT.email': 'um e-mail como ana@exemplo.com.br',

  'REQUIRED.billOneOf': 'Esperava barCode ou digitableLine, vieram os dois vazios',
  'CONFLICT.otherBill':
    'Esperava a linha digitável do código de barras em barCode, veio a linha de outra conta (código de barras {barCode})',
  'DATE_OUT_OF_RANGE.payAt': 'Esperava payAt a partir de hoje ({today}) (o banco recusa data passada), veio {got}',
  'EXPECT.accountNumber': 'um número de conta de até 20 dígitos (dígito verificador depois de um hífen aceito)',
  'EXPECT.branch': 'um número de agência de até 5 dígitos',
  'EXPECT.phoneKey': 'uma chave de celular +55 + DDD + 9 dígitos, como +5511987654321',
  'CONFLICT.claimDocument': 'Esperava vazio ou o documento do titular {document}, veio {got}',
  AMOUNT_MISMATCH:
    'Esperava o próprio valor do QR code, {amount} (um código estático com valor não aceita outro), veio {got}',
  INVALID_PIX_KEY: 'Esperava uma chave Pix: CPF, CNPJ, telefone +55, e-mail ou chave aleatória (EVP), veio {got}',
  'WHY.dynamicOnly': 'só para PIX_DYNAMIC',
  'WHY.staticOnly': 'só para PIX_STATIC',
  'WHEN.guidForDynamic': 'um GUID, para PIX_DYNAMIC',
  'WHERE.column': 'coluna {index} ({source} -> {column})',
  'WHERE.columnSame': 'coluna {index} ({column})',
  'WHERE.columnAbsent': 'coluna {column}',
  'WHERE.line': '{file} linha {line}',

  LIMIT_PER_ROW: 'Esperava no máximo {max} ({setting}, {brl}), veio {got}',
  DUPLICATE_NATURAL_KEY: 'Mesma chave de negócio ({kind}) da linha {line} deste arquivo: não foi enviada de novo',
  'DUPLICATE_NATURAL_KEY.answeredIn': ' (respondida em {answer})',
  'DUPLICATE_NATURAL_KEY.otherFile':
    'Mesma chave de negócio ({kind}) da linha {line} de {file}{answered}: não foi enviada de novo',
  'ROW_INVALID.invalid': 'A linha é inválida',
  BATCH_HAS_INVALID_ROWS:
    'Não enviada: este arquivo de {kind} tem {count} linha(s) inválida(s), e um arquivo que movimenta dinheiro é enviado inteiro ou não é enviado',
  'STEP_ERROR.internal': 'Erro interno ao processar a linha: {reason}',
  ROW_UNPARSABLE: 'A linha guardada não é mais válida: {errors}',
  STOPPED_OUTCOME_UNKNOWN: (p: P) =>
    `Parado quando o resultado da etapa ${p.step} era desconhecido${paren(p.reason)}; resolvido na próxima execução`,
  'UNKNOWN_OUTCOME.earlierRun': 'uma execução anterior parou no meio do pedido',
  'UNKNOWN_OUTCOME.unknown': 'resultado desconhecido',
  UNKNOWN_OUTCOME_NOT_RESENT:
    'A etapa {step} pode ter sido feita no banco ({reason}); nunca é reenviada às cegas: confira no banco',
  'UNKNOWN_OUTCOME.lookupFailed': 'A etapa {step} pode ter sido feita no banco, e a consulta falhou: {reason}',
  'RATE_LIMITED.stillLimited': 'Ainda limitado pelo banco (429) depois de {attempts} tentativas: {reason}',
  UNKNOWN_OUTCOME:
    'Etapa {step}: resultado desconhecido depois de {attempts} tentativa(s): {reason}; tentada de novo na próxima execução',
  'UNKNOWN_OUTCOME.notCompleted':
    'A etapa {step} não pôde ser concluída depois de {attempts} tentativa(s): {reason}; tentada de novo na próxima execução',
  'DUPLICATE.original': '{message} (original: {state})',
  'DUPLICATE.notFinished': 'ainda não terminou',

  FILE_IS_LINK:
    '{file} é um link simbólico. O remessa nunca segue links na caixa de entrada: o destino não foi lido e nada foi enviado. Copie o próprio arquivo para a caixa de entrada em vez de criar um link.',
  FILE_IS_FOLDER:
    '{file} é uma pasta, não um arquivo: nada dentro dela foi lido e nada foi enviado. Coloque os arquivos CSV diretamente em inbox/<tipo>/.',
  FILE_NOT_REGULAR:
    '{file} é {what}, não um arquivo comum: não foi aberto e nada foi enviado. Deixe um arquivo CSV comum.',
  'ENTRY.fifo': 'um pipe nomeado (FIFO)',
  'ENTRY.socket': 'um socket',
  'ENTRY.device': 'um dispositivo',
  'ENTRY.other': 'outra coisa',
  FILE_UNREADABLE:
    'Não foi possível ler {file}: {why} ({code}). Nada foi enviado. Dê ao usuário com que o remessa roda permissão de leitura no arquivo e deixe-o de novo.',
  'FILE_UNREADABLE.denied': 'permissão negada',
  'FILE_UNREADABLE.system': 'erro do sistema',
  FILE_CUT_OFF:
    '{file} parece cortado: {what}, e o arquivo não muda há {seconds} s. Nada foi enviado. Se o envio foi interrompido, envie o arquivo inteiro de novo: com um nome temporário (nome.csv.tmp ou nome.csv.filepart) renomeado para nome.csv ao terminar, ou seguido de um marcador nome.csv.done.',
  'UNFINISHED.empty': 'o arquivo está vazio',
  'UNFINISHED.openQuote': 'a linha {line} abre aspas que nunca fecham',
  'UNFINISHED.shortLine': 'a linha {line} tem {columns} das {headerColumns} colunas do cabeçalho e não termina',
  'UNFINISHED.noLineEnd': 'a linha {line} não termina (falta a quebra de linha)',
  'HEADER.problems': '{count} problemas no cabeçalho:',
  'HEADER.more': '... e mais {count}',
  'HEADER.at': 'coluna {column} ({header})',
  'HEADER.empty': 'um cabeçalho vazio',
  'HEADER.suggestion':
    'Para ler estes cabeçalhos, acrescente estes mappings ao arquivo de configuração (junto dos que já houver; um cabeçalho mapeado para "" é ignorado), confira cada um e recarregue (SIGHUP) ou reinicie:',
  HEADER_UNKNOWN_COLUMN:
    'Esperava um nome de coluna deste tipo de lote (veja docs/batches.md) ou um cabeçalho mapeado, veio {header}',
  'HEADER_UNKNOWN_COLUMN.nearest':
    'Esperava um nome de coluna deste tipo de lote (veja docs/batches.md) ou um cabeçalho mapeado, veio {header}; nome conhecido mais próximo: {nearest} ({column})',
  HEADER_DUPLICATE_COLUMN:
    'Esperava cada coluna uma só vez, veio {target} tanto na coluna {firstColumn} ({firstHeader}) quanto na coluna {column} ({header}); mapeie uma delas para "" para ignorá-la',
  HEADER_MISSING_COLUMN: 'Esperava a coluna obrigatória {target}, veio um cabeçalho sem ela',
  'HEADER_MISSING_COLUMN.example':
    'Esperava a coluna obrigatória {target} (por exemplo, um cabeçalho {example}), veio um cabeçalho sem ela',
  HEADER_BAD_MAPPING:
    'Esperava que o mapping nomeasse uma das colunas deste tipo de lote, veio {mapped} para o cabeçalho {header}',
  FILE_EMPTY: 'Esperava uma linha de cabeçalho e linhas de dados, veio um arquivo vazio',
  'FILE_EMPTY.blank': 'Esperava uma linha de cabeçalho e linhas de dados, vieram só linhas em branco',
  'FILE_EMPTY.noHeader': 'Esperava uma linha de cabeçalho, não veio nenhuma',
  FILE_NOT_TEXT: 'Esperava um arquivo de texto CSV, veio {reason}',
  FILE_NO_ROWS: 'Esperava ao menos uma linha de dados depois do cabeçalho, não veio nenhuma',
  FILE_ENCODING:
    'Esperava texto UTF-8 do começo ao fim (o arquivo é UTF-8), veio um byte que não é UTF-8 ({bytes}) na coluna {column} (byte {offset}); ler o arquivo de outro jeito mudaria os outros acentos: corrija esse byte e salve o arquivo como UTF-8, ou configure a codificação',
  FILE_MIXED_ENCODING:
    'Esperava uma só codificação (a maioria dos acentos é Windows-1252), vieram bytes que se leem como UTF-8 ({bytes}) na coluna {column} (byte {offset}); o arquivo mistura codificações, e nenhuma leitura dá todas as linhas como foram escritas: salve-o numa só codificação, ou configure a codificação',
  'FILE_MIXED_ENCODING.start':
    'Esperava uma só codificação (o começo do arquivo é Windows-1252), vieram bytes que se leem como UTF-8 ({bytes}) na coluna {column} (byte {offset}); o arquivo mistura codificações, e nenhuma leitura dá todas as linhas como foram escritas: salve-o numa só codificação, ou configure a codificação',
  CSV_SYNTAX: 'Esperava um CSV bem formado (delimitador {delimiter}, campos entre aspas "), veio: {reason}',
  'REJECTED.header': '{file} não foi processado: nada foi enviado ao banco.',
  'VALIDATE.summary': (p: P) =>
    `${p.file}: ${plural(p.rows, 'linha', 'linhas')}, ${plural(p.valid, 'válida', 'válidas')}, ${plural(p.invalid, 'inválida', 'inválidas')}, ${plural(p.errors, 'erro', 'erros')}${p.policy ? `; ${p.policy}` : ''}`,
  'VALIDATE.amounts': 'valores: {valid} válidos, {invalid} inválidos',
  'VALIDATE.allOrNothing': 'política all-or-nothing: nada seria enviado',
  'VALIDATE.sendValid': (p: P) =>
    `política send-valid: ${p.valid === '1' ? '1 linha válida seria enviada' : `${p.valid} linhas válidas seriam enviadas`}`,
  'VALIDATE.moreErrors': '... há mais erros (só os primeiros {max} listados)',
  'VALIDATE.cannotProcess': '{file}: o arquivo não pode ser processado',
  'VALIDATE.noKind': '{file}: Esperava o arquivo numa pasta de tipo ou com nome <tipo>-*.csv (ou --kind), veio {name}',
  'VALIDATE.notFound': '{file}: não encontrado',
  'SUMMARY.amounts': 'valores: {parts}',
  'PROGRESS.rows': (p: P) =>
    `${p.label}: ${p.done}${p.total ? `/${p.total}` : ''} linhas${p.counts ? ` (${p.counts})` : ''}, ${p.rate} linhas/s${p.eta ? `, faltam ${p.eta}` : ''}`,
  'PROGRESS.done': (p: P) => `${p.label}: ${p.done} linhas processadas${p.counts ? ` (${p.counts})` : ''}`,
  'PROGRESS.bar': '{label} [{bar}] {value}/{total} linhas | {duration_formatted} | faltam {eta_formatted}',
  'STATUS.driver': 'Em uso agora pelo processo {pid} em {host} desde {since}',
  'STATUS.driverNobody': 'Em uso agora por: ninguém (nenhum daemon ou run usa a pasta de dados)',
  'STATUS.rejectedWhole': 'arquivo recusado por inteiro: {code}',
  'STATUS.toGo': '{count} a fazer',
  'STATUS.rateUnknown': 'ritmo ainda desconhecido',
  'STATUS.rate': '{rate} linhas/s, termina em {eta}',
  'STATUS.waitingRows':
    'Linhas aguardando: {count} (o banco não pôde ser alcançado; nada delas foi enviado; vão quando ele voltar)',
  'STATUS.settleHint':
    'Para resolvê-las: `remessa retry [LOTE]` pergunta de novo ao banco; `remessa resolve LOTE LINHA --as ...` registra o que uma pessoa conferiu.',
  'STATUS.noStore': 'Ainda não há store em {file}: nada foi processado.',
  'STATUS.batches': 'Lotes: {count}',
  'STATUS.noRows': 'nenhuma linha',
  'STATUS.older': '... mais {count} antigos',
  'STATUS.rows': 'Linhas: {counts}',
  'STATUS.none': 'nenhuma',
  'STATUS.uncertain': 'Linhas incertas: {count}',
  'STATUS.uncertainRow': (p: P) =>
    `${p.kind} ${p.file} linha ${p.line}${p.step ? ` etapa ${p.step}` : ''}: ${p.code} ${p.message} (chave de idempotência ${p.key})`,
  'RUN.parked': 'parado antes do fim: ainda sem resposta, continua na próxima execução',
  'RUN.notFound': 'não encontrado',
  'RUN.notRegular': 'não é um arquivo comum (links na caixa de entrada nunca são seguidos)',
  'RUN.takenMeanwhile': 'pego por outro processo enquanto isso',
  'RUN.nothingWaiting': 'nada esperando na caixa de entrada',
  'STATUS.valid': 'válidas',
  'STATUS.invalid': 'inválidas',
};
